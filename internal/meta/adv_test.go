package meta_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/meta"
)

// values turns a META's tags into strings for comparing.
func values(m *meta.Meta) map[uint8]string {
	out := map[uint8]string{}
	for t, v := range m.Values() {
		out[t] = string(v)
	}

	return out
}

// Hand-built copies decode to their records, and the encoder, given the
// same tags, writes exactly those bytes (records in tag order).
func TestGoldenCopies(t *testing.T) {
	big := strings.Repeat("x", 4000)

	tests := []struct {
		name    string
		records [][]byte
		want    map[uint8]string
		// encoded: the encoder writes this very block (tag order).
		encoded bool
	}{
		{"empty", nil, map[uint8]string{}, true},
		{"upgrade", [][]byte{rec(0x06, "A")}, map[uint8]string{meta.Upgrade: "A"}, true},
		{"empty value", [][]byte{rec(0x0c, "")}, map[uint8]string{meta.UserReserved1: ""}, true},
		{"several", [][]byte{rec(0x06, "B"), rec(0x09, `{"provider":"luks2"}`), rec(0x0f, "uuid"), rec(0xff, big)},
			map[uint8]string{0x06: "B", 0x09: `{"provider":"luks2"}`, 0x0f: "uuid", 0xff: big}, true},
		// Talos writes in map order: any order reads the same.
		{"unsorted", [][]byte{rec(0x0f, "u"), rec(0x06, "A")}, map[uint8]string{0x06: "A", 0x0f: "u"}, false},
		// A repeated tag: the last one wins, as Talos reads it.
		{"repeated", [][]byte{rec(0x0c, "old"), rec(0x0c, "new")}, map[uint8]string{0x0c: "new"}, false},
		// Records stop at tag 0 even if bytes follow.
		{"after end", [][]byte{rec(0x06, "A"), rec(0, ""), rec(0x07, "lost")}, map[uint8]string{0x06: "A"}, false},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := block(tt.records...)
			img := image(b, b, nil)

			m, err := meta.Decode(img)
			if err != nil {
				t.Fatal(err)
			}

			if got := values(m); !maps.Equal(got, tt.want) {
				t.Fatalf("decoded %q, want %q", got, tt.want)
			}

			if len(m.Damaged()) != 0 || m.Blank() {
				t.Fatalf("damaged %v, blank %v", m.Damaged(), m.Blank())
			}

			if !tt.encoded {
				return
			}

			fresh, err := meta.New(partLen)
			if err != nil {
				t.Fatal(err)
			}

			for tag, v := range tt.want {
				if _, err := fresh.SetTag(tag, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}

			out, err := fresh.Encode()
			if err != nil {
				t.Fatal(err)
			}

			if !bytes.Equal(out, img) {
				t.Fatalf("encoded image differs from the hand-built one at byte %d", firstDiff(out, img))
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}

	return min(len(a), len(b))
}

// The exact bytes of a one-tag copy, spelled out.
func TestCopyLayout(t *testing.T) {
	m, _ := meta.New(partLen)
	if _, err := m.SetTag(meta.Upgrade, []byte("A")); err != nil {
		t.Fatal(err)
	}

	img, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}

	want := []byte{0x5a, 0x4b, 0x3c, 0x2d, 0, 0, 0, 6, 0, 0, 0, 1, 'A', 0, 0, 0, 0}
	if !bytes.Equal(img[:len(want)], want) {
		t.Fatalf("head % x, want % x", img[:len(want)], want)
	}

	if tail := img[tailOff:blockLen]; !bytes.Equal(tail, []byte{0xa5, 0xb4, 0xc3, 0xd2}) {
		t.Fatalf("tail % x", tail)
	}

	if !bytes.Equal(img[:blockLen], img[blockLen:2*blockLen]) {
		t.Fatal("the two copies differ")
	}

	if !isZeroBytes(img[2*blockLen:]) {
		t.Fatal("bytes after the copies are not zero (fresh syslinux area)")
	}
}

func isZeroBytes(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// Every way a copy goes bad, in either copy: the other one is read and
// the bad one reported, then rewritten by a flush.
func TestDamagedCopy(t *testing.T) {
	good := block(rec(0x06, "A"), rec(0x0c, "user"))
	want := map[uint8]string{0x06: "A", 0x0c: "user"}

	damages := []struct {
		name   string
		spoil  func(b []byte)
		reason string
	}{
		{"flipped value byte", func(b []byte) { b[12] ^= 0x01 }, "checksum"},
		{"flipped checksum", func(b []byte) { b[sumOff] ^= 0x80 }, "checksum"},
		{"head magic", func(b []byte) { b[0] = 0 }, "head magic 0x004b3c2d"},
		{"tail magic", func(b []byte) { b[tailOff+3] = 0 }, "tail magic"},
		{"zeroed", func(b []byte) { clear(b) }, "blank (all zeros)"},
		{"zeroed head", func(b []byte) { clear(b[:1000]) }, "head magic"},
		{"size past the end, resealed", func(b []byte) {
			binary.BigEndian.PutUint32(b[8:], 0xfffffff0)
			reseal(b)
		}, "claims 4294967280 bytes"},
		{"tag over a byte, resealed", func(b []byte) {
			binary.BigEndian.PutUint32(b[4:], 0x106)
			reseal(b)
		}, "does not fit in a byte"},
	}

	for _, d := range damages {
		for bad := 1; bad <= 2; bad++ {
			t.Run(fmt.Sprintf("%s in copy %d", d.name, bad), func(t *testing.T) {
				spoilt := bytes.Clone(good)
				d.spoil(spoilt)

				c1, c2 := good, spoilt
				if bad == 1 {
					c1, c2 = spoilt, good
				}

				path := writeImage(t, image(c1, c2, nil))

				m, err := meta.Open(path)
				if err != nil {
					t.Fatal(err)
				}

				if got := values(m); !maps.Equal(got, want) {
					t.Fatalf("read %q, want %q", got, want)
				}

				dmg := m.Damaged()
				if len(dmg) != 1 || dmg[0].Copy != bad || !strings.Contains(dmg[0].Reason, d.reason) {
					t.Fatalf("damaged %v, want copy %d: %s", dmg, bad, d.reason)
				}

				// Edit with nothing to change still repairs.
				_, repaired, err := meta.Edit(path, nil)
				if err != nil {
					t.Fatal(err)
				}

				if len(repaired) != 1 || repaired[0].Copy != bad {
					t.Fatalf("repaired %v", repaired)
				}

				if got := readImage(t, path); !bytes.Equal(got, image(good, good, nil)) {
					t.Fatalf("after repair the image differs at byte %d", firstDiff(got, image(good, good, nil)))
				}

				if _, repaired, err = meta.Edit(path, nil); err != nil || len(repaired) != 0 {
					t.Fatalf("second edit: repaired %v, %v", repaired, err)
				}
			})
		}
	}
}

// Two good copies that differ (a write torn between them): the first,
// written first, wins and the second is brought in line.
func TestCopiesDiffer(t *testing.T) {
	m, err := meta.Decode(image(block(rec(0x06, "B")), block(rec(0x06, "A")), nil))
	if err != nil {
		t.Fatal(err)
	}

	if v, _ := m.ReadTag(meta.Upgrade); string(v) != "B" {
		t.Fatalf("0x06 = %q, want the first copy's B", v)
	}

	if d := m.Damaged(); len(d) != 1 || d[0].Copy != 2 || !strings.Contains(d[0].Reason, "differs from copy 1") {
		t.Fatalf("damaged %v", d)
	}
}

// No good copy is an error naming both, never a panic; all zeros is an
// empty META.
func TestBothCopies(t *testing.T) {
	good := block(rec(0x06, "A"))
	flipped := bytes.Clone(good)
	flipped[12] ^= 1

	garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, blockLen/4)

	tests := []struct {
		name   string
		c1, c2 []byte
		errs   []string // "" for no error
	}{
		{"both flipped", flipped, flipped, []string{"copy 1: checksum", "copy 2: checksum"}},
		{"garbage and zeros", garbage, nil, []string{"copy 1: head magic 0xdeadbeef", "copy 2: blank (all zeros)"}},
		{"zeros and garbage", nil, garbage, []string{"copy 1: blank (all zeros)", "copy 2: head magic"}},
		{"blank", nil, nil, nil},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := meta.Decode(image(tt.c1, tt.c2, nil))

			if tt.errs == nil {
				if err != nil {
					t.Fatal(err)
				}

				if !m.Blank() || len(m.List()) != 0 || len(m.Damaged()) != 0 {
					t.Fatalf("blank %v, tags %v, damaged %v", m.Blank(), m.List(), m.Damaged())
				}

				return
			}

			if !errors.Is(err, meta.ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}

			for _, s := range tt.errs {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}

	// Edit refuses to touch a corrupt partition.
	path := writeImage(t, image(flipped, flipped, nil))
	if _, _, err := meta.Edit(path, func(m *meta.Meta) error { _, err := m.SetTag(6, []byte("B")); return err }); !errors.Is(err, meta.ErrCorrupt) {
		t.Fatalf("edit of a corrupt META: %v", err)
	}

	if got := readImage(t, path); !bytes.Equal(got, image(flipped, flipped, nil)) {
		t.Fatal("a corrupt META was written to")
	}
}

// The store takes Σ(len(value)+8) + 20 ≤ 256 KiB − 40 and refuses more
// with ErrOverflow, changing nothing.
func TestCapacity(t *testing.T) {
	const limit = blockLen - 40 - 20 // for Σ(len(value)+8)

	m, _ := meta.New(partLen)

	if _, err := m.SetTag(0x0c, make([]byte, limit-8+1)); !errors.Is(err, meta.ErrOverflow) {
		t.Fatalf("one byte over: %v", err)
	}

	if _, err := m.SetTag(0x0c, make([]byte, limit-8-9)); err != nil {
		t.Fatal(err)
	}

	if _, err := m.SetTag(0x0d, []byte("ab")); !errors.Is(err, meta.ErrOverflow) || !strings.Contains(err.Error(), "set tag 0x0d: META is full") {
		t.Fatalf("a new 2-byte value with 9 bytes left: %v", err)
	}

	if _, ok := m.ReadTag(0x0d); ok {
		t.Fatal("a refused value was stored")
	}

	if changed, err := m.SetTag(0x0d, []byte("a")); err != nil || !changed {
		t.Fatalf("a new 1-byte value with 9 bytes left: %v %v", changed, err)
	}

	if m.Free() != 0 {
		t.Fatalf("free %d", m.Free())
	}

	img, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}

	back, err := meta.Decode(img)
	if err != nil || len(back.List()) != 2 {
		t.Fatalf("full store read back: %v %v", back, err)
	}

	// Shrinking, rewriting the same value and deleting always pass.
	if changed, err := m.SetTag(0x0d, []byte("a")); err != nil || changed {
		t.Fatalf("same value: %v %v", changed, err)
	}

	if _, err := m.SetTag(0x0c, []byte("small")); err != nil {
		t.Fatal(err)
	}

	if !m.DeleteTag(0x0c) || m.DeleteTag(0x0c) {
		t.Fatal("delete reports wrongly")
	}
}

// A store Talos filled to its own limit (it does not count a new record's
// header) still reads, and can be shrunk.
func TestTalosFullStore(t *testing.T) {
	// Talos accepts a last new tag while 20 + Σ(len+8) − 8 ≤ 256 KiB − 40:
	// Σ(len+8) may reach 262092, 8 past what this package allows.
	const talosMax = blockLen - 40 - 20 + 8

	last := rec(0x0d, "12345678")
	first := rec(0x0c, strings.Repeat("v", talosMax-len(last)-8))

	b := block(first, last)
	m, err := meta.Decode(image(b, b, nil))
	if err != nil {
		t.Fatal(err)
	}

	if _, err := m.SetTag(0x0e, []byte("x")); !errors.Is(err, meta.ErrOverflow) {
		t.Fatalf("grew a full store: %v", err)
	}

	if _, err := m.SetTag(0x0d, []byte("1234")); err != nil {
		t.Fatalf("shrink: %v", err)
	}

	if _, err := m.Encode(); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidTagAndSize(t *testing.T) {
	m, _ := meta.New(partLen)
	if _, err := m.SetTag(0, []byte("x")); !errors.Is(err, meta.ErrInvalidTag) {
		t.Fatalf("tag 0: %v", err)
	}

	if _, err := meta.New(512 * 1024); !errors.Is(err, meta.ErrTooSmall) {
		t.Fatalf("New(512 KiB): %v", err)
	}

	if _, err := meta.Decode(make([]byte, 100)); !errors.Is(err, meta.ErrTooSmall) {
		t.Fatalf("Decode(100 bytes): %v", err)
	}
}

func TestTagNames(t *testing.T) {
	for tag, want := range map[uint8]string{
		meta.Upgrade: "0x06 Upgrade", meta.StateEncryptionConfig: "0x09 StateEncryptionConfig",
		meta.UUIDOverride: "0x0f UUIDOverride", meta.DiskImageBootloader: "0x11 DiskImageBootloader", 0xab: "0xab ",
	} {
		if got := meta.TagID(tag) + " " + meta.TagName(tag); got != want {
			t.Errorf("%d: %q, want %q", tag, got, want)
		}
	}
}
