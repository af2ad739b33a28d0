package meta_test

import (
	"bytes"
	"maps"
	"testing"

	"github.com/talosbox/talosbox/internal/meta"
)

// advSys is the syslinux ADV that extlinux wrote in Talos's
// testdata/adv.sys (tag 1 = "test me"): head magic, checksum, the record,
// zeros, tail magic.
var advSys = func() []byte {
	c := make([]byte, legacyLen)
	copy(c, []byte{165, 47, 45, 90, 142, 155, 111, 208, 1, 7, 't', 'e', 's', 't', ' ', 'm', 'e'})
	copy(c[legacyLen-4:], []byte{100, 191, 40, 221})

	return c
}()

// The hand sealing matches what syslinux itself wrote.
func TestLegacySealing(t *testing.T) {
	if got := legacyCopy("\x01test me"); !bytes.Equal(got, advSys) {
		t.Fatalf("hand-sealed copy differs from extlinux's at byte %d", firstDiff(got, advSys))
	}

	if !legacyGood(advSys) {
		t.Fatal("extlinux's copy fails the consistency check")
	}
}

// Tags only the syslinux ADV holds are read as a fallback, not listed (as
// Talos mirrors only its own ADV), and deleted from there.
func TestLegacyFallback(t *testing.T) {
	b := block(rec(0x0c, "talos"))
	legacy := twice(legacyCopy("\x06B", "\x0clegacy"))

	m, err := meta.Decode(image(b, b, legacy))
	if err != nil {
		t.Fatal(err)
	}

	if v, ok := m.ReadTag(meta.Upgrade); !ok || string(v) != "B" {
		t.Fatalf("0x06 = %q %v, want the legacy B", v, ok)
	}

	if v, _ := m.ReadTag(meta.UserReserved1); string(v) != "talos" {
		t.Fatalf("0x0c = %q: the Talos ADV must win", v)
	}

	if got := m.List(); len(got) != 1 || got[0] != 0x0c {
		t.Fatalf("list %v", got)
	}

	// Untouched, the area is written back as read.
	img, _ := m.Encode()
	if !bytes.Equal(img[partLen-2*legacyLen:], legacy) {
		t.Fatal("the syslinux area was not written back byte for byte")
	}

	if !m.DeleteTag(meta.Upgrade) {
		t.Fatal("delete of a legacy-only tag found nothing")
	}

	if _, ok := m.ReadTag(meta.Upgrade); ok {
		t.Fatal("0x06 still reads after delete")
	}

	img, _ = m.Encode()
	want := twice(legacyCopy("\x0clegacy"))

	if got := img[partLen-2*legacyLen:]; !bytes.Equal(got, want) {
		t.Fatalf("syslinux area after delete differs at byte %d", firstDiff(got, want))
	}

	// Deleting a tag both hold removes it from both.
	m.DeleteTag(meta.UserReserved1)

	img, _ = m.Encode()
	if got := img[partLen-2*legacyLen:]; !bytes.Equal(got, twice(legacyCopy())) || !legacyGood(got[:legacyLen]) {
		t.Fatal("syslinux area after the last delete is not an empty sealed ADV")
	}
}

// syslinux reads the second copy when the first is bad; garbage without a
// good copy holds no tags and is left alone.
func TestLegacyCopies(t *testing.T) {
	b := block()
	bad := legacyCopy("\x06A")
	bad[20] ^= 0xff

	// 3 + 257 bytes of records, then one claiming 255 bytes with 238 left.
	x255 := string(bytes.Repeat([]byte{'x'}, 255))
	truncated := []byte("\x06\x01A\x07\xff" + x255 + "\x08\xff" + string(bytes.Repeat([]byte{'y'}, 238)))

	tests := []struct {
		name   string
		legacy []byte
		want   map[uint8]string
	}{
		{"second copy", append(bad, legacyCopy("\x06B")...), map[uint8]string{6: "B"}},
		{"garbage", bytes.Repeat([]byte{0x06, 0x01, 'X'}, 2*legacyLen/3+1)[:2*legacyLen], map[uint8]string{}},
		// A record running past the data area ends the records.
		{"truncated", twice(legacySeal(truncated)), map[uint8]string{6: "A", 7: x255}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.legacy) != 2*legacyLen {
				t.Fatalf("test data: %d bytes", len(tt.legacy))
			}

			m, err := meta.Decode(image(b, b, tt.legacy))
			if err != nil {
				t.Fatal(err)
			}

			got := map[uint8]string{}

			for tag := range 256 {
				if v, ok := m.ReadTag(uint8(tag)); ok {
					got[uint8(tag)] = string(v)
				}
			}

			if !maps.Equal(got, tt.want) {
				t.Fatalf("legacy tags %q, want %q", got, tt.want)
			}

			img, _ := m.Encode()
			if !bytes.Equal(img[partLen-2*legacyLen:], tt.legacy) {
				t.Fatal("the syslinux area was not written back as read")
			}
		})
	}
}
