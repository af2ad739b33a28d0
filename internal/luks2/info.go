package luks2

import (
	"fmt"
)

// KeyslotInfo describes one keyslot for callers that sync keys (which
// slots exist, with what KDF) without opening them.
type KeyslotInfo struct {
	ID       int
	Type     string // "luks2" for every slot this package can open
	KeySize  int    // volume key bytes
	Priority int    // 0 ignore, 1 normal, 2 prefer
	// PBKDF is the slot's KDF as stored (Iterations is argon2's time cost
	// or pbkdf2's iteration count). IterTime is unset.
	PBKDF                PBKDF
	AreaOffset, AreaSize uint64
}

// Keyslots lists the keyslots by id.
func (h *Header) Keyslots() []KeyslotInfo {
	var out []KeyslotInfo
	for _, id := range sortedKeys(h.md.Keyslots) {
		k := h.md.Keyslots[id]
		p := PBKDF{Type: k.KDF.Type, Hash: k.KDF.Hash, Iterations: k.KDF.Iterations, Memory: k.KDF.Memory}
		if k.KDF.Type == KDFArgon2i || k.KDF.Type == KDFArgon2id {
			p.Iterations, p.Parallel = k.KDF.Time, uint8(min(k.KDF.CPUs, 255))
		}
		out = append(out, KeyslotInfo{
			ID: id, Type: k.Type, KeySize: k.KeySize, Priority: k.priority(), PBKDF: p,
			AreaOffset: uint64(k.Area.Offset), AreaSize: uint64(k.Area.Size),
		})
	}
	return out
}

// KeyslotsSize is the size of the keyslots area that follows both header
// copies.
func (h *Header) KeyslotsSize() uint64 { return uint64(h.md.Config.KeyslotsSize) }

// SegmentInfo is the data segment as dm-crypt needs it.
type SegmentInfo struct {
	Offset     uint64 // bytes from the start of the data device
	Size       uint64 // bytes; 0 when Dynamic
	Dynamic    bool   // the segment runs to the end of the device
	Cipher     string
	SectorSize int
	IVTweak    uint64 // added to the 512-byte sector number of each IV
}

// Segment returns segment 0, the encrypted data.
func (h *Header) Segment() (SegmentInfo, error) {
	s := h.md.Segments[0]
	if s == nil || s.Type != "crypt" {
		return SegmentInfo{}, fmt.Errorf("luks2: no crypt segment 0: %w", ErrUnsupported)
	}
	return SegmentInfo{
		Offset: uint64(s.Offset), Size: s.Size.Bytes, Dynamic: s.Size.Dynamic,
		Cipher: s.Encryption, SectorSize: s.SectorSize, IVTweak: uint64(*s.IVTweak),
	}, nil
}

// SectorCipher returns the cipher for segment 0 under volumeKey. Offsets
// passed to it are relative to the segment start.
func (h *Header) SectorCipher(volumeKey []byte) (*SectorCipher, error) {
	s, err := h.Segment()
	if err != nil {
		return nil, err
	}
	return NewSectorCipher(s.Cipher, volumeKey, s.SectorSize, s.IVTweak)
}

// JSON returns the metadata as this package would write it.
func (h *Header) JSON() ([]byte, error) { return h.md.marshal() }
