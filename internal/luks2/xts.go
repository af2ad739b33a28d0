package luks2

import (
	"crypto/aes"
	"fmt"

	"golang.org/x/crypto/xts"
)

// CipherAESXTSPlain64 is the only cipher implemented, and Talos's default.
const CipherAESXTSPlain64 = "aes-xts-plain64"

// SectorCipher encrypts data the way dm-crypt does for aes-xts-plain64:
// each sector is one XTS data unit whose tweak is the little-endian 64-bit
// sector number. As in dm-crypt without iv_large_sectors (cryptsetup never
// sets it for LUKS2), that number counts 512-byte units even when sectors
// are 4096 bytes, and iv_tweak is added to it.
type SectorCipher struct {
	c          *xts.Cipher
	sectorSize int
	ivTweak    uint64
}

// NewSectorCipher makes a cipher for one segment. key is 32, 48 or 64 bytes
// (AES-128/192/256 in XTS's two halves); sectorSize is 512, 1024, 2048 or
// 4096.
func NewSectorCipher(cipher string, key []byte, sectorSize int, ivTweak uint64) (*SectorCipher, error) {
	if cipher != CipherAESXTSPlain64 {
		return nil, fmt.Errorf("luks2: cipher %q: %w", cipher, ErrUnsupported)
	}
	switch len(key) {
	case 32, 48, 64:
	default:
		return nil, fmt.Errorf("luks2: %s needs a 256, 384 or 512-bit key, got %d bits", cipher, 8*len(key))
	}
	switch sectorSize {
	case 512, 1024, 2048, 4096:
	default:
		return nil, fmt.Errorf("luks2: sector size %d", sectorSize)
	}
	c, err := xts.NewCipher(aes.NewCipher, key)
	if err != nil {
		return nil, fmt.Errorf("luks2: %s: %w", cipher, err)
	}
	return &SectorCipher{c: c, sectorSize: sectorSize, ivTweak: ivTweak}, nil
}

// SectorSize is the encryption unit in bytes.
func (s *SectorCipher) SectorSize() int { return s.sectorSize }

// Encrypt encrypts src into dst (which may be src). offset is where src
// starts within the segment, in bytes; it and len(src) must be multiples of
// the sector size.
func (s *SectorCipher) Encrypt(dst, src []byte, offset uint64) error {
	return s.each(dst, src, offset, s.c.Encrypt)
}

// Decrypt is Encrypt's inverse.
func (s *SectorCipher) Decrypt(dst, src []byte, offset uint64) error {
	return s.each(dst, src, offset, s.c.Decrypt)
}

func (s *SectorCipher) each(dst, src []byte, offset uint64, f func(out, in []byte, n uint64)) error {
	ss := uint64(s.sectorSize)
	if offset%ss != 0 || uint64(len(src))%ss != 0 || len(dst) < len(src) {
		return fmt.Errorf("luks2: %d bytes at %d are not whole %d-byte sectors", len(src), offset, ss)
	}
	for i := 0; i < len(src); i += s.sectorSize {
		iv := (offset+uint64(i))/512 + s.ivTweak
		f(dst[i:i+s.sectorSize], src[i:i+s.sectorSize], iv)
	}
	return nil
}
