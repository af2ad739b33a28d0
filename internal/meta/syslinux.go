package meta

import (
	"bytes"
	"encoding/binary"
)

// Layout of the syslinux ADV (syslinux's adv.c) in the last KiB of the
// partition: two identical 512-byte copies, little-endian.
const (
	legacyCopySize = 512
	// LegacySize is both syslinux copies, at the very end of the partition.
	LegacySize = 2 * legacyCopySize

	legacyMagic1 uint32 = 0x5a2d2fa5 // head
	legacyMagic2 uint32 = 0xa3041767 // what words 4..508 sum to
	legacyMagic3 uint32 = 0xdd28bf64 // tail

	legacyDataOff = 8
	legacyDataEnd = legacyCopySize - 4
)

// legacyRecord is one (tag, value) of the syslinux ADV, in on-disk order.
type legacyRecord struct {
	tag   uint8
	value []byte
}

// legacyADV is the syslinux area as read. Talos only ever reads it and
// deletes from it; untouched, it is written back byte for byte.
type legacyADV struct {
	raw     []byte         // LegacySize bytes as read
	records []legacyRecord // from the first good copy; none without one
	dirty   bool           // a record was deleted: write records, not raw
}

func decodeLegacy(raw []byte) legacyADV {
	l := legacyADV{raw: bytes.Clone(raw)}

	// syslinux reads the first copy, then the second if the first is bad.
	for _, c := range [][]byte{raw[:legacyCopySize], raw[legacyCopySize:]} {
		if legacyValid(c) {
			l.records = legacyRecords(c)
			break
		}
	}

	return l
}

func legacyValid(c []byte) bool {
	if binary.LittleEndian.Uint32(c) != legacyMagic1 || binary.LittleEndian.Uint32(c[legacyDataEnd:]) != legacyMagic3 {
		return false
	}

	var sum uint32
	for i := 4; i < legacyDataEnd; i += 4 {
		sum += binary.LittleEndian.Uint32(c[i:])
	}

	return sum == legacyMagic2
}

func legacyRecords(c []byte) []legacyRecord {
	var out []legacyRecord

	for i := legacyDataOff; i+2 <= legacyDataEnd; {
		tag, size := c[i], int(c[i+1])
		if tag == 0 || i+2+size > legacyDataEnd {
			break
		}

		out = append(out, legacyRecord{tag: tag, value: bytes.Clone(c[i+2 : i+2+size])})
		i += 2 + size
	}

	return out
}

func (l *legacyADV) read(tag uint8) ([]byte, bool) {
	for _, r := range l.records {
		if r.tag == tag {
			return r.value, true
		}
	}

	return nil, false
}

// delete removes every record of tag, as syslinux's adv_set does before
// it writes a new one.
func (l *legacyADV) delete(tag uint8) bool {
	kept := l.records[:0]

	for _, r := range l.records {
		if r.tag != tag {
			kept = append(kept, r)
		}
	}

	found := len(kept) != len(l.records)
	l.records = kept
	l.dirty = l.dirty || found

	return found
}

// bytes is the area to write back: as read, or re-encoded after a delete.
func (l *legacyADV) bytes() []byte {
	if !l.dirty {
		return l.raw
	}

	c := make([]byte, legacyCopySize)
	binary.LittleEndian.PutUint32(c, legacyMagic1)
	binary.LittleEndian.PutUint32(c[legacyDataEnd:], legacyMagic3)

	off := legacyDataOff
	for _, r := range l.records {
		// Records only ever shrink from a copy that held them.
		c[off], c[off+1] = r.tag, byte(len(r.value))
		copy(c[off+2:], r.value)
		off += 2 + len(r.value)
	}

	var sum uint32
	for i := legacyDataOff; i < legacyDataEnd; i += 4 {
		sum += binary.LittleEndian.Uint32(c[i:])
	}

	binary.LittleEndian.PutUint32(c[4:], legacyMagic2-sum)

	return append(c, c...)
}
