// Package luks2 reads and writes LUKS2 headers the way cryptsetup does, so
// that a volume formatted here opens with cryptsetup and dm-crypt, and one
// formatted by cryptsetup opens here.
//
// The package covers what a Talos-style node needs: format with a
// passphrase, unlock (passphrase → volume key), add, test and remove key
// slots, tokens, and repair of a damaged header copy. It does no I/O on the
// data area beyond what tests and format checks need (SectorCipher); on a
// node, dm-crypt encrypts the data with the volume key returned by Unlock.
//
// Every function takes the device and re-reads the header, like the
// cryptsetup CLI, so callers hold no state between calls. Key material
// (derived keys, anti-forensic stripes, volume-key copies made here) is
// zeroed after use; the Go runtime may still have copied some of it (HMAC
// pads, AES key schedules), which no Go API lets us clear. Passphrases and
// returned volume keys belong to the caller, who should zero them.
//
// Supported: keyslots of type luks2 with argon2id, argon2i or pbkdf2
// (sha1/sha256/sha512), AF type luks1, digests of type pbkdf2, the cipher
// aes-xts-plain64 for keyslot areas and data segments. Anything else in a
// header is kept intact when the header is rewritten, but cannot be used
// for unlocking.
package luks2

import (
	"errors"
	"fmt"
	"io"
)

// Errors callers are expected to test with errors.Is. They carry no
// package prefix because they are always wrapped with context.
var (
	// ErrWrongKey: the passphrase opens no keyslot (or not the one asked for).
	ErrWrongKey = errors.New("wrong passphrase")
	// ErrNotLUKS2: neither header copy carries the LUKS2 magic and version.
	ErrNotLUKS2 = errors.New("not a LUKS2 device")
	// ErrCorrupt: a LUKS2 magic is present but no copy of the header is valid.
	ErrCorrupt = errors.New("no valid LUKS2 header copy")
	// ErrSlotInUse: AddKey was asked for a keyslot that already exists.
	ErrSlotInUse = errors.New("keyslot is in use")
	// ErrNoSlot: the keyslot or token asked for does not exist.
	ErrNoSlot = errors.New("no such keyslot")
	// ErrNoFreeSlot: all 32 keyslots are used, or the keyslots area is full.
	ErrNoFreeSlot = errors.New("no free keyslot")
	// ErrLastSlot: RemoveKey would remove the only keyslot, making the data
	// unrecoverable; rotate by adding the new key first.
	ErrLastSlot = errors.New("refusing to remove the last keyslot")
	// ErrUnsupported: the header uses a feature this package does not implement.
	ErrUnsupported = errors.New("unsupported")
)

// AnySlot asks AddKey for the lowest free keyslot and TestKey/UnlockSlot for
// any keyslot.
const AnySlot = -1

// MaxSlots is the number of keyslots and of tokens LUKS2 allows (0–31).
const MaxSlots = 32

// Device is what header updates need. *os.File satisfies it, for an image
// file or a block device.
type Device interface {
	io.ReaderAt
	io.WriterAt
}

// Unlock tries the passphrase on every usable keyslot, in cryptsetup's order
// (priority high first, then normal; priority ignore is skipped), and
// returns the volume key and the slot that opened. The caller should zero
// the key when done. A passphrase that opens nothing gives ErrWrongKey.
func Unlock(dev io.ReaderAt, passphrase []byte) (volumeKey []byte, slot int, err error) {
	return UnlockSlot(dev, passphrase, AnySlot)
}

// UnlockSlot is Unlock restricted to one keyslot (or AnySlot). Unlike
// Unlock, a specific slot is tried even when its priority is ignore, as
// cryptsetup does with --key-slot.
func UnlockSlot(dev io.ReaderAt, passphrase []byte, slot int) (volumeKey []byte, usedSlot int, err error) {
	h, err := ReadHeader(dev)
	if err != nil {
		return nil, -1, err
	}
	return h.unlock(dev, passphrase, slot)
}

// TestKey reports which keyslot the passphrase opens (slot may be AnySlot),
// like cryptsetup open --test-passphrase. The volume key is not returned.
func TestKey(dev io.ReaderAt, passphrase []byte, slot int) (int, error) {
	vk, used, err := UnlockSlot(dev, passphrase, slot)
	clear(vk)
	return used, err
}

// AddKey opens the volume with an existing passphrase and stores a new
// passphrase in keyslot slot (AnySlot: the lowest free one). It returns
// the slot used.
func AddKey(dev Device, passphrase, newPassphrase []byte, slot int, kdf PBKDF) (int, error) {
	vk, _, err := Unlock(dev, passphrase)
	if err != nil {
		return -1, err
	}
	defer clear(vk)
	return AddKeyByVolumeKey(dev, vk, newPassphrase, slot, kdf)
}

// AddKeyByVolumeKey stores newPassphrase in a keyslot given the volume key
// itself (as from Unlock, or held by an opened dm-crypt mapping). The key is
// checked against the header's digest first, so a wrong key never produces
// a keyslot that opens to garbage.
func AddKeyByVolumeKey(dev Device, volumeKey, newPassphrase []byte, slot int, kdf PBKDF) (int, error) {
	h, err := ReadHeader(dev)
	if err != nil {
		return -1, err
	}
	if err := h.writable(); err != nil {
		return -1, err
	}
	dg, err := h.segmentDigest()
	if err != nil {
		return -1, err
	}
	if err := dg.verify(volumeKey); err != nil {
		return -1, fmt.Errorf("luks2: volume key: %w", err)
	}
	slot, err = h.addKeyslot(dev, volumeKey, newPassphrase, slot, kdf)
	if err != nil {
		return -1, err
	}
	if err := h.write(dev); err != nil {
		return -1, err
	}
	return slot, nil
}

// RemoveKey destroys keyslot slot, like cryptsetup luksKillSlot: its area is
// overwritten and it is dropped from the digests and tokens that name it
// (the tokens themselves stay, as cryptsetup leaves them). No passphrase is
// needed. Removing the last keyslot is refused with ErrLastSlot.
func RemoveKey(dev Device, slot int) error {
	h, err := ReadHeader(dev)
	if err != nil {
		return err
	}
	if err := h.writable(); err != nil {
		return err
	}
	if err := h.removeKeyslot(dev, slot); err != nil {
		return err
	}
	return h.write(dev)
}

// Repair rewrites a damaged or stale header copy from the newest valid one,
// like cryptsetup repair (which cryptsetup also does silently whenever it
// loads such a header with write access). The seqid is kept, so both
// copies end up equal. It reports whether anything was written.
func Repair(dev Device) (bool, error) {
	h, err := ReadHeader(dev)
	if err != nil {
		return false, err
	}
	if !h.NeedsRepair() {
		return false, nil
	}
	return true, h.repair(dev)
}
