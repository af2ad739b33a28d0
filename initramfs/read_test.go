package initramfs

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// An archive read back is the archive written, in every compression,
// and a second archive concatenated after the first replaces its members.
func TestReadRoundTrip(t *testing.T) {
	a := New()
	a.SetModTime(1764374400)
	a.Bytes("init", []byte("#!/bin/talosbox\n"), 0o755)
	a.Bytes("etc/os-release", []byte("NAME=talosbox\n"), 0o644)
	a.Dir("tmp", 0o755|os.ModeSticky)
	a.Symlink("bin/sh", "/init")
	a.Bytes("usr/bin/su", []byte("suid"), 0o755|os.ModeSetuid)

	var want bytes.Buffer
	if _, err := a.WriteTo(&want); err != nil {
		t.Fatal(err)
	}

	for _, c := range Compressions() {
		t.Run(string(c), func(t *testing.T) {
			var buf bytes.Buffer
			if err := a.WriteCompressed(&buf, c); err != nil {
				t.Fatal(err)
			}

			b, err := Read(&buf)
			if err != nil {
				t.Fatal(err)
			}

			var got bytes.Buffer
			if _, err := b.WriteTo(&got); err != nil {
				t.Fatal(err)
			}

			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("read back and written again, the archive differs (%d bytes, want %d)", got.Len(), want.Len())
			}
		})
	}

	// The embedded config's shape: another archive after the first.
	over := New()
	over.Bytes("etc/os-release", []byte("NAME=custom\n"), 0o644)

	var both bytes.Buffer
	both.Write(want.Bytes())
	both.Write(make([]byte, 512))

	if _, err := over.WriteTo(&both); err != nil {
		t.Fatal(err)
	}

	b, err := Read(&both)
	if err != nil {
		t.Fatal(err)
	}

	if got, err := b.ReadFile("etc/os-release"); err != nil || string(got) != "NAME=custom\n" {
		t.Errorf("etc/os-release: %q, %v: want the later archive's", got, err)
	}

	if !b.Has("init") || !b.Remove("bin") || b.Has("bin/sh") || b.Remove("bin") {
		t.Errorf("Remove: the subtree is not gone, or was reported twice")
	}
}

func TestReadRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"not cpio":  "PK\x03\x04 a zip file",
		"truncated": newcMagic + strings.Repeat("0", 50),
		"bad field": newcMagic + strings.Repeat("z", 104),
	} {
		if _, err := Read(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "read initramfs") {
			t.Errorf("%s: %v", name, err)
		}
	}

	var buf bytes.Buffer

	cw := NewWriter(&buf)
	if err := cw.WriteRecord(Record{Name: "big", Mode: modeRegular | 0o644, Size: 10, Data: strings.NewReader("0123456789")}); err != nil {
		t.Fatal(err)
	}

	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}

	if _, err := Read(io.LimitReader(&buf, 120)); err == nil {
		t.Errorf("a member cut short was taken")
	}
}
