package luks2

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// Keyslot priorities as cryptsetup stores them; a missing priority is normal.
const (
	priorityIgnore = 0
	priorityNormal = 1
	priorityPrefer = 2
)

func (k *keyslot) priority() int {
	if k.Priority == nil {
		return priorityNormal
	}
	return *k.Priority
}

// unlock opens one keyslot, or with AnySlot tries them in cryptsetup's order.
func (h *Header) unlock(dev io.ReaderAt, passphrase []byte, slot int) ([]byte, int, error) {
	if slot != AnySlot {
		if slot < 0 || slot >= MaxSlots || h.md.Keyslots[slot] == nil {
			return nil, -1, fmt.Errorf("luks2: keyslot %d: %w", slot, ErrNoSlot)
		}
		vk, err := h.openKeyslot(dev, passphrase, slot)
		if err != nil {
			return nil, -1, fmt.Errorf("luks2: keyslot %d: %w", slot, err)
		}
		return vk, slot, nil
	}
	var order []int
	for _, prio := range []int{priorityPrefer, priorityNormal} {
		for _, id := range sortedKeys(h.md.Keyslots) {
			k := h.md.Keyslots[id]
			if k.Type == "luks2" && k.priority() == prio && h.md.digestFor(id) != nil {
				order = append(order, id)
			}
		}
	}
	var other error
	for _, id := range order {
		vk, err := h.openKeyslot(dev, passphrase, id)
		if err == nil {
			return vk, id, nil
		}
		if !errors.Is(err, ErrWrongKey) && other == nil {
			other = fmt.Errorf("keyslot %d: %w", id, err)
		}
	}
	if other != nil {
		// The passphrase may belong to the slot we could not try, so the
		// caller sees both that no slot opened and why one was not tried.
		return nil, -1, fmt.Errorf("luks2: %w; %w", ErrWrongKey, other)
	}
	return nil, -1, fmt.Errorf("luks2: no keyslot opens with this passphrase: %w", ErrWrongKey)
}

// openKeyslot derives the area key, decrypts the split key, merges it and
// checks it against the digest.
func (h *Header) openKeyslot(dev io.ReaderAt, passphrase []byte, id int) ([]byte, error) {
	k := h.md.Keyslots[id]
	if k.Type != "luks2" {
		return nil, fmt.Errorf("type %q: %w", k.Type, ErrUnsupported)
	}
	d := h.md.digestFor(id)
	if d == nil {
		return nil, fmt.Errorf("not bound to a digest: %w", ErrUnsupported)
	}
	afLen := k.KeySize * k.AF.Stripes
	n := roundUp(uint64(afLen), 512)
	if n > uint64(k.Area.Size) {
		return nil, fmt.Errorf("area of %d bytes is smaller than %d", k.Area.Size, n)
	}
	derived, err := k.KDF.derive(passphrase, k.Area.KeySize)
	if err != nil {
		return nil, err
	}
	defer clear(derived)
	c, err := NewSectorCipher(k.Area.Encryption, derived, 512, 0)
	if err != nil {
		return nil, fmt.Errorf("area: %w", err)
	}
	buf := make([]byte, n)
	defer clear(buf)
	if err := readFull(dev, buf, uint64(k.Area.Offset)); err != nil {
		return nil, fmt.Errorf("reading area: %w", err)
	}
	if err := c.Decrypt(buf, buf, 0); err != nil {
		return nil, err
	}
	vk, err := afMerge(buf, k.KeySize, k.AF.Stripes, k.AF.Hash)
	if err != nil {
		return nil, err
	}
	if err := d.verify(vk); err != nil {
		clear(vk)
		return nil, err
	}
	return vk, nil
}

// addKeyslot writes a new keyslot's area and records it in the metadata;
// the caller writes the header afterwards, so a crash in between leaves
// only an unreferenced area.
func (h *Header) addKeyslot(dev Device, vk, passphrase []byte, slot int, p PBKDF) (int, error) {
	if slot == AnySlot {
		for slot = 0; slot < MaxSlots && h.md.Keyslots[slot] != nil; slot++ {
		}
		if slot == MaxSlots {
			return -1, fmt.Errorf("luks2: %w", ErrNoFreeSlot)
		}
	}
	if slot < 0 || slot >= MaxSlots {
		return -1, fmt.Errorf("luks2: keyslot %d: out of range 0-%d", slot, MaxSlots-1)
	}
	if h.md.Keyslots[slot] != nil {
		return -1, fmt.Errorf("luks2: keyslot %d: %w", slot, ErrSlotInUse)
	}
	if len(vk) == 0 || len(vk) > maxKeyBytes {
		return -1, fmt.Errorf("luks2: keyslot %d: volume key of %d bytes", slot, len(vk))
	}
	// cryptsetup encrypts keyslot areas with aes-xts-plain64 and the volume
	// key's size when that is a valid XTS key size, else 512 bits.
	areaKey := len(vk)
	if areaKey != 32 && areaKey != 48 && areaKey != 64 {
		areaKey = 64
	}
	kd, err := p.resolve(areaKey)
	if err != nil {
		return -1, fmt.Errorf("luks2: keyslot %d: %w", slot, err)
	}
	kd.Salt = make([]byte, 32)
	rand.Read(kd.Salt)

	afLen := uint64(len(vk)) * afStripes
	size := roundUp(afLen, 4096)
	off, ok := h.findGap(size)
	if !ok {
		return -1, fmt.Errorf("luks2: keyslot %d: keyslots area has no %d free bytes: %w", slot, size, ErrNoFreeSlot)
	}

	derived, err := kd.derive(passphrase, areaKey)
	if err != nil {
		return -1, fmt.Errorf("luks2: keyslot %d: %w", slot, err)
	}
	defer clear(derived)
	c, err := NewSectorCipher(CipherAESXTSPlain64, derived, 512, 0)
	if err != nil {
		return -1, err
	}
	split, err := afSplit(vk, afStripes, "sha256")
	if err != nil {
		return -1, err
	}
	buf := make([]byte, roundUp(afLen, 512))
	copy(buf, split)
	clear(split)
	defer clear(buf)
	if err := c.Encrypt(buf, buf, 0); err != nil {
		return -1, err
	}
	if _, err := dev.WriteAt(buf, int64(off)); err != nil {
		return -1, fmt.Errorf("luks2: keyslot %d: writing area: %w", slot, err)
	}

	dg, err := h.segmentDigest()
	if err != nil {
		return -1, err
	}
	h.md.Keyslots[slot] = &keyslot{
		Type:    "luks2",
		KeySize: len(vk),
		AF:      af{Type: "luks1", Stripes: afStripes, Hash: "sha256"},
		Area:    area{Type: "raw", Offset: jsonU64(off), Size: jsonU64(size), Encryption: CipherAESXTSPlain64, KeySize: areaKey},
		KDF:     kd,
	}
	dg.Keyslots = append(dg.Keyslots, strconv.Itoa(slot))
	return slot, nil
}

// findGap returns the lowest offset in the keyslots area with size free
// bytes, as cryptsetup places keyslots.
func (h *Header) findGap(size uint64) (uint64, bool) {
	type span struct{ lo, hi uint64 }
	var used []span
	for _, k := range h.md.Keyslots {
		if k.Area.Size > 0 {
			used = append(used, span{uint64(k.Area.Offset), uint64(k.Area.Offset) + uint64(k.Area.Size)})
		}
	}
	slices.SortFunc(used, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	start := 2 * h.MetadataSize
	end := start + uint64(h.md.Config.KeyslotsSize)
	pos := start
	for _, s := range used {
		if s.lo >= pos+size {
			break
		}
		pos = max(pos, s.hi)
	}
	if pos+size > end {
		return 0, false
	}
	return pos, true
}

// removeKeyslot wipes the area first: once the header no longer names the
// slot nothing would ever overwrite it, whereas a wiped area that the header
// still names is just a dead slot.
func (h *Header) removeKeyslot(dev Device, slot int) error {
	if slot < 0 || slot >= MaxSlots || h.md.Keyslots[slot] == nil {
		return fmt.Errorf("luks2: keyslot %d: %w", slot, ErrNoSlot)
	}
	if len(h.md.Keyslots) == 1 {
		return fmt.Errorf("luks2: keyslot %d: %w", slot, ErrLastSlot)
	}
	k := h.md.Keyslots[slot]
	start := 2 * h.MetadataSize
	end := start + uint64(h.md.Config.KeyslotsSize)
	lo, n := uint64(k.Area.Offset), uint64(k.Area.Size)
	if lo >= start && n <= end-lo {
		zero := make([]byte, 64<<10)
		for done := uint64(0); done < n; {
			w := min(uint64(len(zero)), n-done)
			if _, err := dev.WriteAt(zero[:w], int64(lo+done)); err != nil {
				return fmt.Errorf("luks2: keyslot %d: wiping area: %w", slot, err)
			}
			done += w
		}
	}
	delete(h.md.Keyslots, slot)
	for _, d := range h.md.Digests {
		d.Keyslots = unassign(d.Keyslots, slot)
	}
	for id, raw := range h.md.Tokens {
		t, err := unassignToken(raw, slot)
		if err != nil {
			return fmt.Errorf("luks2: token %d: %w", id, err)
		}
		h.md.Tokens[id] = t
	}
	return nil
}

// writable refuses to touch a header whose config lists mandatory
// requirements (for example an interrupted online re-encryption): cryptsetup
// sets them precisely so that tools that do not understand them keep out.
func (h *Header) writable() error {
	raw, ok := h.md.Config.Extra["requirements"]
	if !ok {
		return nil
	}
	var req struct {
		Mandatory []string `json:"mandatory"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Mandatory) > 0 {
		return fmt.Errorf("luks2: header requires %v: %w", req.Mandatory, ErrUnsupported)
	}
	return nil
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }
