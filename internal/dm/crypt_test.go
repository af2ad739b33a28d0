package dm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestCryptTargetParams(t *testing.T) {
	key := []byte{0x00, 0x11, 0xaa, 0xff}

	for _, c := range []struct {
		name       string
		sectorSize int
		options    []string
		want       string
	}{
		{"512", 512, nil, "aes-xts-plain64 0011aaff 7 /dev/vda2 32768"},
		{"default sector", 0, nil, "aes-xts-plain64 0011aaff 7 /dev/vda2 32768"},
		{"4096", 4096, nil, "aes-xts-plain64 0011aaff 7 /dev/vda2 32768 1 sector_size:4096"},
		{"4096 and options", 4096, []string{"allow_discards", "no_read_workqueue"},
			"aes-xts-plain64 0011aaff 7 /dev/vda2 32768 3 sector_size:4096 allow_discards no_read_workqueue"},
		{"options only", 512, []string{"allow_discards"}, "aes-xts-plain64 0011aaff 7 /dev/vda2 32768 1 allow_discards"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := CryptTarget(8, 1024, "aes-xts-plain64", key, 7, "/dev/vda2", 32768, c.sectorSize, c.options...)
			if tg.err != nil {
				t.Fatal(tg.err)
			}

			if string(tg.Params) != c.want || tg.Type != "crypt" || tg.Start != 8 || tg.Length != 1024 || !tg.Secret {
				t.Errorf("target %d+%d %s %q secret=%t, want params %q", tg.Start, tg.Length, tg.Type, tg.Params, tg.Secret, c.want)
			}

			// Sized exactly: an append would have left a copy of the key
			// in an array nobody zeroes.
			if cap(tg.Params) != len(tg.Params) {
				t.Errorf("params buffer: len %d, cap %d", len(tg.Params), cap(tg.Params))
			}
		})
	}
}

func TestCryptTargetInvalid(t *testing.T) {
	key := []byte("SECRETKEY!")
	hexKey := fmt.Sprintf("%x", key)

	for _, c := range []struct {
		name   string
		target Target
		want   string
	}{
		{"sector size", CryptTarget(0, 8, "aes-xts-plain64", key, 0, "8:0", 0, 1000), "sector size 1000"},
		{"unaligned length", CryptTarget(0, 9, "aes-xts-plain64", key, 0, "8:0", 0, 4096), "multiples of the 4096-byte"},
		{"unaligned offset", CryptTarget(0, 8, "aes-xts-plain64", key, 0, "8:0", 3, 4096), "multiples"},
		{"cipher with a space", CryptTarget(0, 8, "aes xts", key, 0, "8:0", 0, 512), "cipher"},
		{"empty key", CryptTarget(0, 8, "aes-xts-plain64", nil, 0, "8:0", 0, 512), "empty key"},
		{"no device", CryptTarget(0, 8, "aes-xts-plain64", key, 0, "", 0, 512), "device"},
		{"option with a space", CryptTarget(0, 8, "aes-xts-plain64", key, 0, "8:0", 0, 512, "a b"), "option"},
	} {
		t.Run(c.name, func(t *testing.T) {
			newFake(t)

			if c.target.err == nil || !strings.Contains(c.target.err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", c.target.err, c.want)
			}

			if c.target.Params != nil {
				t.Errorf("an invalid target has params %q", c.target.Params)
			}

			// The error reaches the caller through Create, without the key.
			_, err := Create("vol", "", []Target{c.target}, 0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Create: %v, want %q", err, c.want)
			}

			if err != nil && (strings.Contains(err.Error(), hexKey) || strings.Contains(err.Error(), string(key))) {
				t.Errorf("error shows the key: %v", err)
			}
		})
	}
}

func TestCryptTargetNeverPrintsKey(t *testing.T) {
	tg := CryptTarget(0, 8, "aes-xts-plain64", []byte{0xde, 0xad, 0xbe, 0xef}, 0, "8:0", 0, 512)

	for _, s := range []string{fmt.Sprint(tg), fmt.Sprintf("%v %+v %#v %s", tg, tg, tg, tg), fmt.Sprint([]Target{tg})} {
		if strings.Contains(s, "deadbeef") || !strings.Contains(s, "<secret>") {
			t.Errorf("formatted target: %s", s)
		}
	}

	tg.Wipe()

	if !bytes.Equal(tg.Params, make([]byte, len(tg.Params))) {
		t.Errorf("Wipe left %q", tg.Params)
	}

	public := Target{Start: 0, Length: 8, Type: "linear", Params: []byte("8:0 0")}
	public.Wipe()

	if fmt.Sprint(public) != "0 8 linear 8:0 0" {
		t.Errorf("Wipe or String changed a public target: %v", public)
	}
}

func TestMaskCryptKey(t *testing.T) {
	for in, want := range map[string]string{
		"aes-xts-plain64 0011aaff 0 8:0 32768":                    "aes-xts-plain64 00000000 0 8:0 32768",
		"aes-xts-plain64 0011aaff 0 8:0 32768 1 sector_size:4096": "aes-xts-plain64 00000000 0 8:0 32768 1 sector_size:4096",
		"aes-xts-plain64 :64:logon:cryptsetup:x 0 8:0 0":          "aes-xts-plain64 :64:logon:cryptsetup:x 0 8:0 0",
		"aes-xts-plain64 - 0 8:0 0":                               "aes-xts-plain64 - 0 8:0 0",
		"aes-xts-plain64 0011aaff":                                "aes-xts-plain64 00000000",
		"garbage":                                                 "garbage",
	} {
		in := []byte(in)
		orig := bytes.Clone(in)

		if got := maskCryptKey(in); string(got) != want {
			t.Errorf("maskCryptKey(%q) = %q, want %q", orig, got, want)
		}

		if !bytes.Equal(in, orig) {
			t.Errorf("maskCryptKey changed its input to %q", in)
		}
	}
}
