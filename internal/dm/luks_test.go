package dm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/luks2"
)

func TestSegmentSectors(t *testing.T) {
	const mib = 1 << 20

	for _, c := range []struct {
		name string
		seg  luks2.SegmentInfo
		size uint64
		want uint64
		err  string
	}{
		{"dynamic 512", luks2.SegmentInfo{Offset: 16 * mib, Dynamic: true, SectorSize: 512}, 64 * mib, 48 * mib / 512, ""},
		{"dynamic 4096 rounds down", luks2.SegmentInfo{Offset: 16 * mib, Dynamic: true, SectorSize: 4096}, 64*mib + 3*512, 48 * mib / 512, ""},
		{"fixed size", luks2.SegmentInfo{Offset: 16 * mib, Size: 8 * mib, SectorSize: 4096}, 64 * mib, 8 * mib / 512, ""},
		{"fixed size too big", luks2.SegmentInfo{Offset: 16 * mib, Size: 60 * mib, SectorSize: 512}, 64 * mib, 0, "does not fit"},
		{"device too small", luks2.SegmentInfo{Offset: 16 * mib, Dynamic: true, SectorSize: 512}, 16 * mib, 0, "ends before the data offset"},
		{"no whole sector", luks2.SegmentInfo{Offset: 16 * mib, Dynamic: true, SectorSize: 4096}, 16*mib + 512, 0, "no whole 4096-byte sector"},
		{"unaligned offset", luks2.SegmentInfo{Offset: 16*mib + 512, Dynamic: true, SectorSize: 4096}, 64 * mib, 0, "not a multiple"},
	} {
		got, err := segmentSectors(c.seg, c.size)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %d, %v; want %d, %q", c.name, got, err, c.want, c.err)
		}
	}
}

func TestLUKSUUID(t *testing.T) {
	if got := luksUUID("0a1b2c3d-0000-4000-8000-00000000abcd", "state"); got != "CRYPT-LUKS2-0a1b2c3d00004000800000000000abcd-state" {
		t.Errorf("uuid %q", got)
	}

	if got := luksUUID("0a1b2c3d-0000-4000-8000-00000000abcd", strings.Repeat("n", 127)); len(got) != 128 {
		t.Errorf("uuid of %d bytes for a long name", len(got))
	}
}

func TestOpenLUKS2NotABlockDevice(t *testing.T) {
	newFake(t)

	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}

	if _, err := OpenLUKS2(img, "vol", []byte("pass")); err == nil || !strings.Contains(err.Error(), img+" is not a block device") {
		t.Errorf("OpenLUKS2 on a file: %v", err)
	}

	if _, err := OpenLUKS2(filepath.Join(t.TempDir(), "none"), "vol", []byte("pass")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("OpenLUKS2 on nothing: %v", err)
	}
}

func TestCloseLUKS2RefusesOtherMappings(t *testing.T) {
	needRoot(t)

	k := newFake(t)

	if _, err := Create("plain", "", []Target{{Length: 8, Type: "zero"}}, 0); err != nil {
		t.Fatal(err)
	}

	if err := CloseLUKS2("plain"); err == nil || !strings.Contains(err.Error(), "not a LUKS2 crypt mapping") || k.devs["plain"] == nil {
		t.Errorf("CloseLUKS2 of a zero mapping: %v", err)
	}

	tg := CryptTarget(0, 8, "aes-xts-plain64", testKey(), 0, "8:0", 0, 512)
	if _, err := Create("vol", luksUUID("0a1b2c3d-0000-4000-8000-00000000abcd", "vol"), []Target{tg}, 0); err != nil {
		t.Fatal(err)
	}

	if err := CloseLUKS2("vol"); err != nil || k.devs["vol"] != nil {
		t.Errorf("CloseLUKS2: %v", err)
	}
}
