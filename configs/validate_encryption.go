package configs

import (
	"slices"
	"strings"
)

// LUKS2 has 32 key slots.
const maxKeySlot = 31

var ciphers = []string{"aes-xts-plain64", "xchacha12,aes-adiantum-plain64", "xchacha20,aes-adiantum-plain64"}

// EncryptionOptions are the dm-crypt performance flags options may name
// (cryptsetup's --perf-*; Talos's list, plus discards).
var EncryptionOptions = []string{"no_read_workqueue", "no_write_workqueue", "same_cpu_crypt", "submit_from_crypt_cpus", "allow_discards"}

func (v *validator) encryption(e *SystemDiskEncryption) {
	if e == nil {
		return
	}

	if v.mode == ModeContainer {
		v.warnf("machine.systemDiskEncryption", "system disk encryption is ignored in container mode")
	}

	v.partitionEncryption("machine.systemDiskEncryption.state", e.State, true)
	v.partitionEncryption("machine.systemDiskEncryption.ephemeral", e.Ephemeral, false)
}

func (v *validator) partitionEncryption(p string, e *EncryptionConfig, state bool) {
	if e == nil {
		return
	}

	if e.Provider != "" && e.Provider != "luks2" {
		v.errorf(p+".provider", "unsupported encryption provider %q (expected luks2)", e.Provider)
	}

	if e.Cipher != "" && !slices.Contains(ciphers, e.Cipher) {
		v.errorf(p+".cipher", "unsupported cipher %q (expected one of %s)", e.Cipher, strings.Join(ciphers, ", "))
	}

	if e.KeySize != 0 && e.KeySize != 256 && e.KeySize != 512 {
		v.errorf(p+".keySize", "unsupported key size %d (expected 256 or 512 bits)", e.KeySize)
	}

	if b := e.BlockSize; b != 0 && (b < 512 || b > 4096 || b&(b-1) != 0) {
		v.errorf(p+".blockSize", "unsupported block size %d (expected a power of two from 512 to 4096)", b)
	}

	for i, o := range e.Options {
		if !slices.Contains(EncryptionOptions, o) {
			v.errorf(indexPath(p+".options", i), "unsupported option %q (expected one of %s)", o, strings.Join(EncryptionOptions, ", "))
		}
	}

	if len(e.Keys) == 0 {
		v.errorf(p+".keys", "at least one encryption key is required")
	}

	inUse := map[int]bool{}

	for i, key := range e.Keys {
		kp := indexPath(p+".keys", i)

		switch {
		case key.Slot < 0 || key.Slot > maxKeySlot:
			v.errorf(kp+".slot", "encryption key slot %d is out of range (0-%d)", key.Slot, maxKeySlot)
		case inUse[key.Slot]:
			v.errorf(kp+".slot", "encryption key slot %d is already in use", key.Slot)
		}

		inUse[key.Slot] = true

		v.encryptionKey(kp, key, state)
	}
}

func (v *validator) encryptionKey(kp string, key EncryptionKey, state bool) {
	var kinds []string

	if key.Static != nil {
		kinds = append(kinds, "static")

		if key.Static.Passphrase == "" {
			v.errorf(kp+".static.passphrase", "static key passphrase is required")
		}

		if state {
			v.warnf(kp+".static", "a static key for the STATE partition is stored unencrypted in META; use nodeID, kms or tpm")
		}
	}

	if key.NodeID != nil {
		kinds = append(kinds, "nodeID")
	}

	if key.KMS != nil {
		kinds = append(kinds, "kms")

		v.check(kp+".kms.endpoint", checkURL("KMS endpoint", key.KMS.Endpoint, "https", "http", "grpc"))
	}

	if key.TPM != nil {
		kinds = append(kinds, "tpm")
	}

	switch len(kinds) {
	case 0:
		v.errorf(kp, "encryption key at slot %d doesn't have any settings (expected one of static, nodeID, kms or tpm)", key.Slot)
	case 1:
	default:
		v.errorf(kp, "encryption key at slot %d has more than one kind (%s): exactly one of static, nodeID, kms or tpm is allowed",
			key.Slot, strings.Join(kinds, ", "))
	}
}
