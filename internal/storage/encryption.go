package storage

// System disk encryption (machine.systemDiskEncryption): STATE and
// EPHEMERAL as LUKS2 volumes made and opened with internal/luks2, keyed
// as Talos keys them. This file holds what works on a
// volume without device-mapper, so that it is tested on image files; the
// mapping and mounting are in volume_crypt.go.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/luks2"
)

// errUnsupportedKey: kms and tpm keys need services talosbox has not got.
var errUnsupportedKey = errors.New("not supported by talosbox (use nodeID or static)")

// volumeKey is one configured key slot with its passphrase.
type volumeKey struct {
	slot int
	kind string // nodeID or static
	pass []byte
}

func (k volumeKey) String() string { return fmt.Sprintf("slot %d (%s)", k.slot, k.kind) }

func zeroKeys(keys []volumeKey) {
	for _, k := range keys {
		clear(k.pass)
	}
}

// volumeKeys derives the passphrases of ec for the volume labelled label,
// in slot order. machineUUID is the SMBIOS system UUID (nodeID keys).
func volumeKeys(ec *configs.EncryptionConfig, label, machineUUID string) ([]volumeKey, error) {
	keys := make([]volumeKey, 0, len(ec.Keys))

	for _, k := range ec.Keys {
		var (
			vk  = volumeKey{slot: k.Slot}
			err error
		)

		switch {
		case k.LockToState:
			err = fmt.Errorf("lockToState is %w", errUnsupportedKey)
		case k.NodeID != nil:
			vk.kind = "nodeID"
			vk.pass, err = nodeIDKey(machineUUID, label)
		case k.Static != nil:
			vk.kind, vk.pass = "static", []byte(k.Static.Passphrase)
		case k.KMS != nil:
			err = fmt.Errorf("a kms key is %w", errUnsupportedKey)
		case k.TPM != nil:
			err = fmt.Errorf("a tpm key is %w", errUnsupportedKey)
		default:
			err = errors.New("no key kind set")
		}

		if err != nil {
			zeroKeys(keys)
			return nil, fmt.Errorf("%s encryption key in slot %d: %w", label, k.Slot, err)
		}

		keys = append(keys, vk)
	}

	if len(keys) == 0 {
		return nil, fmt.Errorf("%s encryption: no keys configured", label)
	}

	slices.SortFunc(keys, func(a, b volumeKey) int { return a.slot - b.slot })

	return keys, nil
}

// nodeIDKey is Talos's nodeID passphrase: the machine UUID and the volume
// label, concatenated. A UUID in which one character makes up more than
// half (QEMU's all-zero default) is refused, as Talos refuses it: every
// such machine would share the key.
func nodeIDKey(machineUUID, label string) ([]byte, error) {
	if machineUUID == "" {
		return nil, errors.New("the machine has no UUID (/sys/class/dmi/id/product_uuid)")
	}

	counts := map[rune]int{}
	for _, r := range machineUUID {
		counts[r]++
		if counts[r] > len(machineUUID)/2 {
			return nil, fmt.Errorf("machine UUID %q: entropy check failed", machineUUID)
		}
	}

	return []byte(machineUUID + label), nil
}

// machineUUID reads the SMBIOS system UUID from sysfs.
func machineUUID(sysRoot string) string {
	b, err := os.ReadFile(sysRoot + "/class/dmi/id/product_uuid")
	if err != nil {
		return ""
	}

	return strings.ToLower(strings.TrimSpace(string(b)))
}

// nodePBKDF is the key slots' KDF: argon2id benchmarked to half a second,
// with at most an eighth of the machine's memory (cryptsetup would take
// up to 1 GiB for two seconds; a 512 MiB node boots in seconds, twice).
func nodePBKDF() luks2.PBKDF {
	mem := uint32(256 << 10) // KiB

	if total := memTotalKiB(); total > 0 {
		mem = min(mem, uint32(max(total/8, 32<<10)))
	}

	return luks2.PBKDF{Type: luks2.KDFArgon2id, Memory: mem, IterTime: 500 * time.Millisecond}
}

func memTotalKiB() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()

	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}

	return 0
}

// formatVolume writes a LUKS2 header holding keys[0] and adds the other
// keys, and returns the volume key (the caller zeroes it).
func formatVolume(dev luks2.Device, ec *configs.EncryptionConfig, keys []volumeKey, label string, kdf luks2.PBKDF) ([]byte, error) {
	opts := luks2.FormatOptions{Cipher: ec.Cipher, KeySize: int(ec.KeySize), SectorSize: int(ec.BlockSize),
		Label: label, Slot: keys[0].slot, PBKDF: kdf}

	vk, err := luks2.Format(dev, nil, keys[0].pass, opts)
	if err != nil {
		return nil, fmt.Errorf("encrypt %s: %w", label, err)
	}

	// The other slots get the cost the first one was benchmarked to.
	kdf = slotKDF(dev, keys[0].slot, kdf)

	for _, k := range keys[1:] {
		if _, err := luks2.AddKeyByVolumeKey(dev, vk, k.pass, k.slot, kdf); err != nil {
			clear(vk)
			return nil, fmt.Errorf("encrypt %s: add key %s: %w", label, k, err)
		}
	}

	return vk, nil
}

// unlockVolume opens the volume with the first key that works: each key
// in its own slot first (one KDF run each), then in any slot (a key
// configured in a slot other than the one that holds it still opens).
func unlockVolume(dev luks2.Device, keys []volumeKey, label string) ([]byte, volumeKey, error) {
	for _, any := range []bool{false, true} {
		for _, k := range keys {
			slot := k.slot
			if any {
				slot = luks2.AnySlot
			}

			vk, used, err := luks2.UnlockSlot(dev, k.pass, slot)
			if err == nil {
				k.slot = used
				return vk, k, nil
			}

			if !errors.Is(err, luks2.ErrWrongKey) && !errors.Is(err, luks2.ErrNoSlot) {
				return nil, volumeKey{}, fmt.Errorf("unlock %s: %w", label, err)
			}
		}
	}

	slots := make([]string, len(keys))
	for i, k := range keys {
		slots[i] = k.String()
	}

	return nil, volumeKey{}, fmt.Errorf("unlock %s: no configured key opens it (tried %s): %w", label, strings.Join(slots, ", "), luks2.ErrWrongKey)
}

// slotsOf lists the keys' slots, in the keys' order.
func slotsOf(keys []volumeKey) []int {
	s := make([]int, len(keys))
	for i, k := range keys {
		s[i] = k.slot
	}

	return s
}

// slotKDF is the KDF keyslot slot was made with, ready for another slot
// (Iterations set: luks2 runs no benchmark); def when it cannot be read.
func slotKDF(dev luks2.Device, slot int, def luks2.PBKDF) luks2.PBKDF {
	h, err := luks2.ReadHeader(dev)
	if err != nil {
		return def
	}

	for _, ks := range h.Keyslots() {
		if ks.ID == slot && ks.PBKDF.Iterations > 0 {
			return ks.PBKDF
		}
	}

	return def
}

// keySync is what syncKeys did.
type keySync struct {
	Added, Replaced, Removed []int
	// Failed names the slots that could not be synced, with why; the
	// volume stays usable with the key that opened it.
	Failed []string
}

func (s keySync) String() string {
	var parts []string

	for _, p := range []struct {
		what  string
		slots []int
	}{{"added", s.Added}, {"replaced", s.Replaced}, {"removed", s.Removed}} {
		if len(p.slots) > 0 {
			parts = append(parts, fmt.Sprintf("%s key slot(s) %s", p.what, joinInts(p.slots)))
		}
	}

	parts = append(parts, s.Failed...)

	return strings.Join(parts, "; ")
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}

	return strings.Join(s, ",")
}

// syncKeys makes the volume's key slots exactly the configured ones, as
// Talos does on every unlock: that is how keys rotate. A configured slot
// holding another key is rewritten, a missing one added, a slot nobody
// configured removed. opened is the key (and slot) that unlocked it, vk
// the volume key.
func syncKeys(dev luks2.Device, vk []byte, opened volumeKey, keys []volumeKey, kdf luks2.PBKDF) keySync {
	var s keySync

	h, err := luks2.ReadHeader(dev)
	if err != nil {
		return keySync{Failed: []string{err.Error()}}
	}

	present := map[int]bool{}
	for _, ks := range h.Keyslots() {
		present[ks.ID] = true
	}

	// New slots cost what the one that opened costs: no benchmark at boot.
	kdf = slotKDF(dev, opened.slot, kdf)

	configured := map[int]bool{}

	for _, k := range keys {
		configured[k.slot] = true

		if present[k.slot] {
			if k.slot == opened.slot && bytes.Equal(k.pass, opened.pass) {
				continue
			}

			if _, err := luks2.TestKey(dev, k.pass, k.slot); err == nil {
				continue
			} else if !errors.Is(err, luks2.ErrWrongKey) {
				s.Failed = append(s.Failed, fmt.Sprintf("key %s: %v", k, err))
				continue
			}

			// Another key sits in the slot: never the one that opened it
			// (that one is ours by the check above).
			if err := luks2.RemoveKey(dev, k.slot); err != nil {
				s.Failed = append(s.Failed, fmt.Sprintf("key %s: remove the old key: %v", k, err))
				continue
			}

			if _, err := luks2.AddKeyByVolumeKey(dev, vk, k.pass, k.slot, kdf); err != nil {
				s.Failed = append(s.Failed, fmt.Sprintf("key %s: %v", k, err))
				continue
			}

			s.Replaced = append(s.Replaced, k.slot)

			continue
		}

		if _, err := luks2.AddKeyByVolumeKey(dev, vk, k.pass, k.slot, kdf); err != nil {
			s.Failed = append(s.Failed, fmt.Sprintf("key %s: %v", k, err))
			continue
		}

		s.Added = append(s.Added, k.slot)
	}

	// Removed only once every configured key is in: the volume always
	// keeps a key the config knows.
	for id := range present {
		if configured[id] || len(s.Failed) > 0 {
			continue
		}

		if err := luks2.RemoveKey(dev, id); err != nil {
			s.Failed = append(s.Failed, fmt.Sprintf("remove key slot %d: %v", id, err))
			continue
		}

		s.Removed = append(s.Removed, id)
	}

	slices.Sort(s.Removed)

	return s
}

// Talos keeps STATE's encryption config in META (tag 0x09), since the
// machine config that would say how to open STATE lives on STATE. It is
// the legacy v1alpha1 struct marshalled without json tags: Go's field
// names.
type legacyEncryption struct {
	EncryptionProvider    string
	EncryptionKeys        []legacyEncryptionKey
	EncryptionCipher      string
	EncryptionKeySize     uint
	EncryptionBlockSize   uint64
	EncryptionPerfOptions []string
}

type legacyEncryptionKey struct {
	KeyStatic *struct{ KeyData string }
	KeyNodeID *struct{}
	KeyKMS    *struct{ KMSEndpoint string }
	KeySlot   int
	KeyTPM    *struct{ TPMCheckSecurebootStatusOnEnroll *bool }
	// KeyLockToSTATE is omitted by talosbox, which has no salted keys.
	KeyLockToSTATE *bool `json:",omitempty"`
}

// encodeStateEncryption is ec as META's tag 0x09 holds it.
func encodeStateEncryption(ec *configs.EncryptionConfig) ([]byte, error) {
	l := legacyEncryption{EncryptionProvider: ec.Provider, EncryptionCipher: ec.Cipher, EncryptionKeySize: ec.KeySize,
		EncryptionBlockSize: ec.BlockSize, EncryptionPerfOptions: ec.Options}

	for _, k := range ec.Keys {
		lk := legacyEncryptionKey{KeySlot: k.Slot}

		switch {
		case k.Static != nil:
			lk.KeyStatic = &struct{ KeyData string }{k.Static.Passphrase}
		case k.NodeID != nil:
			lk.KeyNodeID = &struct{}{}
		case k.KMS != nil:
			lk.KeyKMS = &struct{ KMSEndpoint string }{k.KMS.Endpoint}
		case k.TPM != nil:
			lk.KeyTPM = &struct{ TPMCheckSecurebootStatusOnEnroll *bool }{k.TPM.CheckSecurebootStatusOnEnroll}
		}

		l.EncryptionKeys = append(l.EncryptionKeys, lk)
	}

	return json.Marshal(l)
}

// decodeStateEncryption reads META's tag 0x09.
func decodeStateEncryption(b []byte) (*configs.EncryptionConfig, error) {
	var l legacyEncryption

	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("META STATE encryption config: %w", err)
	}

	ec := &configs.EncryptionConfig{Provider: l.EncryptionProvider, Cipher: l.EncryptionCipher, KeySize: l.EncryptionKeySize,
		BlockSize: l.EncryptionBlockSize, Options: l.EncryptionPerfOptions}

	for _, lk := range l.EncryptionKeys {
		k := configs.EncryptionKey{Slot: lk.KeySlot, LockToState: lk.KeyLockToSTATE != nil && *lk.KeyLockToSTATE}

		switch {
		case lk.KeyStatic != nil:
			k.Static = &configs.EncryptionKeyStatic{Passphrase: lk.KeyStatic.KeyData}
		case lk.KeyNodeID != nil:
			k.NodeID = &configs.EncryptionKeyNodeID{}
		case lk.KeyKMS != nil:
			k.KMS = &configs.EncryptionKeyKMS{Endpoint: lk.KeyKMS.KMSEndpoint}
		case lk.KeyTPM != nil:
			k.TPM = &configs.EncryptionKeyTPM{CheckSecurebootStatusOnEnroll: lk.KeyTPM.TPMCheckSecurebootStatusOnEnroll}
		}

		ec.Keys = append(ec.Keys, k)
	}

	return ec, nil
}
