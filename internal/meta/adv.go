package meta

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Layout of one copy of the Talos ADV (Talos's adv/talos package).
const (
	// CopySize is one copy; the two copies follow each other from offset 0.
	CopySize = 256 * 1024
	// ADVSize is both copies.
	ADVSize = 2 * CopySize

	magic1 uint32 = 0x5a4b3c2d
	magic2 uint32 = 0xa5b4c3d2

	checksumOff = CopySize - 36 // [32]byte SHA-256
	magic2Off   = CopySize - 4
	dataOff     = 4
	recordHdr   = 8 // uint32 tag, uint32 size

	// capacity is Talos's DataLength: what the records may use, counted
	// with overhead as Talos counts it.
	capacity = CopySize - 40
	// overhead is what Talos charges besides the records (magic and
	// checksum, in its words).
	overhead = 20
)

// ErrOverflow is returned when a value does not fit in the store.
var ErrOverflow = errors.New("META is full")

// used is what the records of tags take against capacity.
func used(tags map[uint8][]byte) int {
	n := overhead
	for _, v := range tags {
		n += recordHdr + len(v)
	}

	return n
}

// decodeCopy checks one copy (magics, then checksum) and reads its
// records. The error says what is wrong, for Damaged and ErrCorrupt.
func decodeCopy(b []byte) (map[uint8][]byte, error) {
	if len(b) != CopySize {
		return nil, fmt.Errorf("%d bytes, want %d", len(b), CopySize)
	}

	if m := binary.BigEndian.Uint32(b); m != magic1 {
		return nil, fmt.Errorf("head magic %#08x, want %#08x", m, magic1)
	}

	if m := binary.BigEndian.Uint32(b[magic2Off:]); m != magic2 {
		return nil, fmt.Errorf("tail magic %#08x, want %#08x", m, magic2)
	}

	if sum := checksum(b); !bytes.Equal(sum[:], b[checksumOff:magic2Off]) {
		return nil, fmt.Errorf("checksum %x, computed %x", b[checksumOff:magic2Off], sum)
	}

	tags := map[uint8][]byte{}
	data := b[dataOff:checksumOff]

	// A record header that no longer fits ends the records, as tag 0 does.
	for len(data) >= recordHdr {
		tag := binary.BigEndian.Uint32(data)
		if tag == 0 {
			break
		}

		size := uint64(binary.BigEndian.Uint32(data[4:]))
		if size > uint64(len(data)-recordHdr) {
			return nil, fmt.Errorf("record of tag %#x claims %d bytes, past the end of the data area", tag, size)
		}

		if tag > 0xff {
			return nil, fmt.Errorf("record tag %#x does not fit in a byte", tag)
		}

		// A repeated tag: the last one wins, as in Talos.
		tags[uint8(tag)] = bytes.Clone(data[recordHdr : recordHdr+size])
		data = data[recordHdr+size:]
	}

	return tags, nil
}

// encodeCopy lays tags out as one copy, records in tag order.
func encodeCopy(tags map[uint8][]byte) ([]byte, error) {
	b := make([]byte, CopySize)
	binary.BigEndian.PutUint32(b, magic1)
	binary.BigEndian.PutUint32(b[magic2Off:], magic2)

	off := dataOff

	for _, tag := range slices.Sorted(maps.Keys(tags)) {
		v := tags[tag]
		if off+recordHdr+len(v) > checksumOff {
			return nil, fmt.Errorf("encode META: tag %s (%d bytes) overflows the data area: %w", TagID(tag), len(v), ErrOverflow)
		}

		binary.BigEndian.PutUint32(b[off:], uint32(tag))
		binary.BigEndian.PutUint32(b[off+4:], uint32(len(v)))
		copy(b[off+recordHdr:], v)
		off += recordHdr + len(v)
	}

	sum := checksum(b)
	copy(b[checksumOff:], sum[:])

	return b, nil
}

// checksum is the SHA-256 of a copy with its checksum field taken as zero.
func checksum(b []byte) [sha256.Size]byte {
	var zero [sha256.Size]byte

	h := sha256.New()
	h.Write(b[:checksumOff])
	h.Write(zero[:])
	h.Write(b[magic2Off:])

	var out [sha256.Size]byte

	h.Sum(out[:0])

	return out
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}

	return true
}
