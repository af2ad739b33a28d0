package meta_test

import (
	"crypto/sha256"
	"encoding/binary"
)

// The format as Talos's ADV code writes it, written out here by hand so
// that the tests do not take the package's word for its own layout.
const (
	blockLen  = 256 * 1024    // one copy of the Talos ADV
	partLen   = 1024 * 1024   // a META partition
	sumOff    = blockLen - 36 // [32]byte SHA-256
	tailOff   = blockLen - 4  // magic 2
	legacyLen = 512           // one syslinux copy
)

// rec is a Talos ADV record: big-endian tag and size, then the value.
func rec(tag uint32, value string) []byte {
	b := binary.BigEndian.AppendUint32(nil, tag)
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))

	return append(b, value...)
}

// block is one copy holding records in the order given.
func block(records ...[]byte) []byte {
	b := make([]byte, blockLen)
	copy(b, []byte{0x5a, 0x4b, 0x3c, 0x2d})
	copy(b[tailOff:], []byte{0xa5, 0xb4, 0xc3, 0xd2})

	off := 4
	for _, r := range records {
		off += copy(b[off:], r)
	}

	reseal(b)

	return b
}

// reseal recomputes a copy's checksum, leaving the rest as it is.
func reseal(b []byte) {
	clear(b[sumOff:tailOff])
	sum := sha256.Sum256(b)
	copy(b[sumOff:tailOff], sum[:])
}

// image is a partition with the two copies given and legacy (1 KiB, or
// nil for zeros) at the end.
func image(c1, c2, legacy []byte) []byte {
	img := make([]byte, partLen)
	copy(img, c1)
	copy(img[blockLen:], c2)
	copy(img[partLen-2*legacyLen:], legacy)

	return img
}

// legacyCopy is one syslinux copy holding records of (tag, value): each
// string is the tag byte followed by the value.
func legacyCopy(records ...string) []byte {
	var data []byte
	for _, r := range records {
		data = append(data, r[0], byte(len(r)-1))
		data = append(data, r[1:]...)
	}

	return legacySeal(data)
}

// legacySeal is one syslinux copy with data (at most 500 bytes) as its
// data area, sealed as syslinux's adv.c does: the words from offset 4 to
// 508 sum to magic 2.
func legacySeal(data []byte) []byte {
	c := make([]byte, legacyLen)
	copy(c, []byte{0xa5, 0x2f, 0x2d, 0x5a})
	copy(c[8:legacyLen-4], data)
	copy(c[legacyLen-4:], []byte{0x64, 0xbf, 0x28, 0xdd})

	var sum uint32
	for i := 8; i < legacyLen-4; i += 4 {
		sum += binary.LittleEndian.Uint32(c[i:])
	}

	binary.LittleEndian.PutUint32(c[4:], 0xa3041767-sum)

	return c
}

// legacyGood checks a syslinux copy as syslinux's adv_consistent does.
func legacyGood(c []byte) bool {
	var sum uint32
	for i := 4; i < legacyLen-4; i += 4 {
		sum += binary.LittleEndian.Uint32(c[i:])
	}

	return binary.LittleEndian.Uint32(c) == 0x5a2d2fa5 && binary.LittleEndian.Uint32(c[legacyLen-4:]) == 0xdd28bf64 && sum == 0xa3041767
}

func twice(b []byte) []byte { return append(append([]byte{}, b...), b...) }
