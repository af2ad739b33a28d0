package meta_test

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/talosbox/talosbox/internal/meta"
)

// FuzzMetaRead puts arbitrary bytes where the decoders look, sealed (so
// that the record parsers run, not only the checksum) or not, and checks
// that no input panics, that errors are the documented ones and that what
// decodes survives a write and a read back.
func FuzzMetaRead(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add(rec(0x06, "A"), uint8(0xff))
	f.Add(append(rec(0x0c, "x"), rec(0x106, "y")...), uint8(0x03))
	f.Add([]byte{0, 0, 0, 6, 0xff, 0xff, 0xff, 0xf8}, uint8(0x01))
	f.Add([]byte{0x06, 0x01, 'A', 0x07, 0xff}, uint8(0x04))
	f.Add(bytes.Repeat([]byte{0x5a, 0x4b, 0x3c, 0x2d}, 64), uint8(0x02))

	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		// Raw: a short or odd input is refused, never read past.
		if _, err := meta.Decode(data); err == nil && len(data) < meta.MinSize {
			t.Fatalf("decoded %d bytes", len(data))
		}

		img := make([]byte, partLen)

		for i, c := range [][]byte{img[:blockLen], img[blockLen : 2*blockLen]} {
			copy(c[4:sumOff], data)

			if mode&(1<<i) != 0 {
				copy(c, []byte{0x5a, 0x4b, 0x3c, 0x2d})
				copy(c[tailOff:], []byte{0xa5, 0xb4, 0xc3, 0xd2})
				reseal(c)
			}
		}

		legacy := img[partLen-2*legacyLen:]
		if mode&4 != 0 {
			copy(legacy, legacySeal(data))
		} else {
			copy(legacy, data)
		}

		if mode&8 != 0 {
			// Unsealed bytes over the first copy too.
			copy(img, data)
		}

		m, err := meta.Decode(img)
		if err != nil {
			if !errors.Is(err, meta.ErrCorrupt) {
				t.Fatalf("unexpected error kind: %v", err)
			}

			return
		}

		for tag := range 256 {
			m.ReadTag(uint8(tag))
		}

		out, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}

		back, err := meta.Decode(out)
		if err != nil {
			t.Fatalf("a written META does not read back: %v", err)
		}

		if !maps.EqualFunc(back.Values(), m.Values(), bytes.Equal) || len(back.Damaged()) != 0 {
			t.Fatalf("round trip changed the tags or left damage: %v", back.Damaged())
		}

		// Deleting every tag (legacy ones too) leaves a valid empty META.
		for tag := 1; tag < 256; tag++ {
			back.DeleteTag(uint8(tag))
		}

		out, err = back.Encode()
		if err != nil {
			t.Fatal(err)
		}

		empty, err := meta.Decode(out)
		if err != nil {
			t.Fatal(err)
		}

		for tag := range 256 {
			if _, ok := empty.ReadTag(uint8(tag)); ok {
				t.Fatalf("tag %d survived deleting everything", tag)
			}
		}
	})
}
