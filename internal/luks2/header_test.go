package luks2

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestHeaderCopies: both copies are written, equal but for magic, offset,
// salt and checksum, and parse back to the same header.
func TestHeaderCopies(t *testing.T) {
	f, _ := formatted(t, "p", FormatOptions{Label: "EPHEMERAL", Subsystem: "talos", UUID: "0b1ab2c3-d4e5-4f60-8172-839405a6b7c8"})
	p := readAt(t, f, 0, DefaultMetadataSize)
	s := readAt(t, f, DefaultMetadataSize, DefaultMetadataSize)
	if string(p[:6]) != magicPrimary || string(s[:6]) != magicSecondary {
		t.Fatalf("magics %q %q", p[:6], s[:6])
	}
	if !bytes.Equal(p[binHeaderSize:], s[binHeaderSize:]) {
		t.Fatal("JSON areas differ")
	}
	if binary.BigEndian.Uint64(s[offHdrOffset:]) != DefaultMetadataSize || binary.BigEndian.Uint64(p[offHdrOffset:]) != 0 {
		t.Fatal("hdr_offset fields")
	}
	if bytes.Equal(p[offSalt:offSalt+lenSalt], s[offSalt:offSalt+lenSalt]) {
		t.Fatal("the copies share a salt")
	}
	h := mustRead(t, f)
	if h.UUID != "0b1ab2c3-d4e5-4f60-8172-839405a6b7c8" || h.Label != "EPHEMERAL" || h.Subsystem != "talos" || h.SeqID != 1 || h.MetadataSize != DefaultMetadataSize {
		t.Fatalf("header %+v", h)
	}
	if _, err := AddKey(f, []byte("p"), []byte("q"), 1, fastPBKDF2); err != nil {
		t.Fatal(err)
	}
	if h := mustRead(t, f); h.SeqID != 2 {
		t.Fatalf("seqid %d after one update", h.SeqID)
	}
}

// TestCorruptCopies damages one copy and then both, in the binary header
// and in the JSON area, and checks the fallback, Repair and the errors.
func TestCorruptCopies(t *testing.T) {
	cases := []struct {
		name         string
		offsets      []int64
		primaryBad   bool
		secondaryBad bool
	}{
		{"primary-json", []int64{4096 + 30}, true, false},
		{"primary-binary", []int64{offUUID}, true, false},
		{"primary-magic", []int64{0}, true, false},
		{"primary-hdr-size", []int64{offHdrSize + 6}, true, false},
		{"secondary-json", []int64{DefaultMetadataSize + 4096 + 30}, false, true},
		{"secondary-checksum", []int64{DefaultMetadataSize + offCsum}, false, true},
		{"both", []int64{4096 + 30, DefaultMetadataSize + 4096 + 30}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, vk := formatted(t, "p", FormatOptions{})
			for _, off := range tc.offsets {
				b := readAt(t, f, off, 1)
				writeAt(t, f, off, []byte{b[0] ^ 0x55})
			}
			h, err := ReadHeader(f)
			if tc.primaryBad && tc.secondaryBad {
				if !errors.Is(err, ErrCorrupt) || h != nil {
					t.Fatalf("both copies bad: %v", err)
				}
				if _, _, err := Unlock(f, []byte("p")); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Unlock: %v", err)
				}
				if _, err := Repair(f); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Repair: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (h.PrimaryErr != nil) != tc.primaryBad || (h.SecondaryErr != nil) != tc.secondaryBad {
				t.Fatalf("primary %v, secondary %v", h.PrimaryErr, h.SecondaryErr)
			}
			got, _, err := Unlock(f, []byte("p"))
			if err != nil || !bytes.Equal(got, vk) {
				t.Fatalf("Unlock on one good copy: %v", err)
			}
			fixed, err := Repair(f)
			if err != nil || !fixed {
				t.Fatalf("Repair = %v, %v", fixed, err)
			}
			h2 := mustRead(t, f)
			if h2.NeedsRepair() || h2.SeqID != h.SeqID {
				t.Fatalf("after repair: %v %v, seqid %d→%d", h2.PrimaryErr, h2.SecondaryErr, h.SeqID, h2.SeqID)
			}
			if fixed, _ := Repair(f); fixed {
				t.Fatal("a second Repair wrote again")
			}
		})
	}
}

// TestStaleCopy: when the copies disagree the one with the higher seqid
// wins, whichever it is, as after a write torn between the two copies.
func TestStaleCopy(t *testing.T) {
	for _, newerPrimary := range []bool{true, false} {
		f, _ := formatted(t, "p", FormatOptions{})
		old := readAt(t, f, 0, 2*DefaultMetadataSize)
		if _, err := AddKey(f, []byte("p"), []byte("q"), 1, fastPBKDF2); err != nil {
			t.Fatal(err)
		}
		if newerPrimary {
			writeAt(t, f, DefaultMetadataSize, old[DefaultMetadataSize:])
		} else {
			writeAt(t, f, 0, old[:DefaultMetadataSize])
		}
		h := mustRead(t, f)
		if h.SeqID != 2 || len(h.Keyslots()) != 2 || (h.PrimaryErr != nil) == newerPrimary {
			t.Fatalf("newer primary %v: seqid %d, %d slots, %v/%v", newerPrimary, h.SeqID, len(h.Keyslots()), h.PrimaryErr, h.SecondaryErr)
		}
		if _, err := Repair(f); err != nil {
			t.Fatal(err)
		}
		if h := mustRead(t, f); h.NeedsRepair() || len(h.Keyslots()) != 2 {
			t.Fatalf("after repair %v/%v", h.PrimaryErr, h.SecondaryErr)
		}
	}
}

// TestSecondaryProbe: with the primary unreadable, a secondary behind a
// larger metadata size is still found.
func TestSecondaryProbe(t *testing.T) {
	f, vk := formatted(t, "p", FormatOptions{MetadataSize: 256 << 10})
	writeAt(t, f, 0, make([]byte, 4096))
	h := mustRead(t, f)
	if h.MetadataSize != 256<<10 || h.PrimaryErr == nil {
		t.Fatalf("metadata size %d, primary %v", h.MetadataSize, h.PrimaryErr)
	}
	if got, _, err := Unlock(f, []byte("p")); err != nil || !bytes.Equal(got, vk) {
		t.Fatalf("Unlock: %v", err)
	}
}

func TestNotLUKS2(t *testing.T) {
	f := newImage(t, 1<<20)
	if _, err := ReadHeader(f); !errors.Is(err, ErrNotLUKS2) {
		t.Fatalf("zeros: %v", err)
	}
	luks1 := make([]byte, 4096)
	copy(luks1, magicPrimary)
	binary.BigEndian.PutUint16(luks1[offVersion:], 1)
	writeAt(t, f, 0, luks1)
	if _, err := ReadHeader(f); !errors.Is(err, ErrNotLUKS2) {
		t.Fatalf("LUKS1: %v", err)
	}
	if _, err := ReadHeader(bytes.NewReader([]byte("LUKS\xba\xbe"))); !errors.Is(err, ErrNotLUKS2) {
		t.Fatalf("truncated: %v", err)
	}
	empty, _ := os.CreateTemp(t.TempDir(), "empty")
	defer empty.Close()
	if _, err := ReadHeader(empty); !errors.Is(err, ErrNotLUKS2) {
		t.Fatalf("empty file: %v", err)
	}
}

// TestTruncatedAfterHeader: a device cut inside the keyslot area still
// parses, and unlocking reports a read error rather than a wrong key.
func TestTruncatedAfterHeader(t *testing.T) {
	f, _ := formatted(t, "p", FormatOptions{})
	if err := f.Truncate(2*DefaultMetadataSize + 4096); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Unlock(f, []byte("p")); err == nil || !strings.Contains(err.Error(), "reading area") {
		t.Fatalf("Unlock on a truncated device: %v", err)
	}
	if _, _, err := UnlockSlot(f, []byte("p"), 0); err == nil || errors.Is(err, ErrWrongKey) {
		t.Fatalf("UnlockSlot on a truncated device: %v", err)
	}
}

// FuzzReadHeader: no input makes the parser panic. Each input is tried as
// is and again with the checksums fixed up, so that mutations reach the
// JSON parser and validation instead of stopping at the checksum.
func FuzzReadHeader(f *testing.F) {
	dev := newFuzzSeed(f)
	f.Add(dev)
	f.Add(dev[:DefaultMetadataSize])
	f.Add(dev[:4096])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkHeader(bytes.NewReader(data))
		fixed := bytes.Clone(data)
		fixChecksum(fixed, 0)
		if len(fixed) >= 4096 {
			fixChecksum(fixed, binary.BigEndian.Uint64(fixed[offHdrSize:]))
		}
		checkHeader(bytes.NewReader(fixed))
	})
}

// checkHeader exercises everything reachable from a parsed header without
// running a KDF, whose costs come from the input.
func checkHeader(r *bytes.Reader) {
	h, err := ReadHeader(r)
	if err != nil {
		return
	}
	h.Keyslots()
	h.Tokens()
	if _, err := h.Segment(); err == nil {
		h.SectorCipher(make([]byte, 64))
	}
	h.JSON()
	h.segmentDigest()
	h.findGap(4096)
	for id := range h.md.Keyslots {
		h.md.digestFor(id)
	}
}

func fixChecksum(b []byte, off uint64) {
	if off > uint64(len(b)) || uint64(len(b))-off < binHeaderSize {
		return
	}
	size := binary.BigEndian.Uint64(b[off+offHdrSize:])
	if !validMetadataSize(size) || size > uint64(len(b))-off {
		return
	}
	area := b[off : off+size]
	clear(area[offCsum : offCsum+lenCsum])
	h := hashFunc("sha256")()
	h.Write(area)
	copy(area[offCsum:], h.Sum(nil))
}

// newFuzzSeed is both copies of a real header with two keyslots of
// different KDFs and a token.
func newFuzzSeed(f *testing.F) []byte {
	dir := f.TempDir()
	img, err := os.Create(dir + "/seed.img")
	if err != nil {
		f.Fatal(err)
	}
	defer img.Close()
	img.Truncate(20 << 20)
	vk, err := Format(img, nil, []byte("p"), FormatOptions{PBKDF: fastPBKDF2, DigestIterations: 1000, KeySize: 256})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := AddKeyByVolumeKey(img, vk, []byte("q"), 4, PBKDF{Type: KDFArgon2i, Iterations: 4, Memory: 64, Parallel: 1}); err != nil {
		f.Fatal(err)
	}
	if err := SetToken(img, 4, []byte(`{"type":"sideroKMS","keyslots":["4"],"UserData":{"sealedData":"AA=="}}`)); err != nil {
		f.Fatal(err)
	}
	b := make([]byte, 2*DefaultMetadataSize)
	if _, err := img.ReadAt(b, 0); err != nil {
		f.Fatal(err)
	}
	return b
}
