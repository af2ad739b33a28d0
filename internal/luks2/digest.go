package luks2

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"slices"
)

// A digest of type pbkdf2 is how LUKS2 recognises the right volume key:
// PBKDF2(volume key, salt) must equal the stored value. A keyslot that
// decrypts to anything else was opened with the wrong passphrase.

// newDigest makes the digest cryptsetup writes at format time: sha256, a
// 32-byte salt and a 32-byte result.
func newDigest(volumeKey []byte, iterations int) *digest {
	d := &digest{Type: "pbkdf2", Hash: "sha256", Keyslots: []string{}, Segments: []string{"0"}, Salt: make([]byte, 32)}
	rand.Read(d.Salt)
	if iterations == 0 {
		iterations = int(benchPBKDF2(hashFunc(d.Hash), len(volumeKey), digestIterTime))
	}
	d.Iterations = max(iterations, minPBKDF2Iter)
	d.Digest = pbkdf2(hashFunc(d.Hash), volumeKey, d.Salt, d.Iterations, 32)
	return d
}

// verify checks a candidate volume key; a mismatch is ErrWrongKey.
func (d *digest) verify(key []byte) error {
	if d.Type != "pbkdf2" {
		return fmt.Errorf("digest type %q: %w", d.Type, ErrUnsupported)
	}
	newHash := hashFunc(d.Hash)
	if newHash == nil {
		return fmt.Errorf("digest hash %q: %w", d.Hash, ErrUnsupported)
	}
	got := pbkdf2(newHash, key, d.Salt, d.Iterations, len(d.Digest))
	if subtle.ConstantTimeCompare(got, d.Digest) != 1 {
		return ErrWrongKey
	}
	return nil
}

// digestFor returns the digest that covers keyslot id, or nil for an
// unbound keyslot.
func (md *metadata) digestFor(id int) *digest {
	for _, dk := range sortedKeys(md.Digests) {
		if d := md.Digests[dk]; hasRef(d.Keyslots, id) {
			return d
		}
	}
	return nil
}

// segmentDigest is the digest of the volume key of segment 0, the one
// every new keyslot must be bound to.
func (h *Header) segmentDigest() (*digest, error) {
	for _, dk := range sortedKeys(h.md.Digests) {
		if d := h.md.Digests[dk]; hasRef(d.Segments, 0) {
			return d, nil
		}
	}
	return nil, fmt.Errorf("luks2: no digest for segment 0: %w", ErrUnsupported)
}

// hasRef reports whether a LUKS2 reference list (ids as strings) names id.
func hasRef(refs []string, id int) bool {
	for _, r := range refs {
		if n, err := parseID(r); err == nil && n == id {
			return true
		}
	}
	return false
}

// unassign drops id from a reference list, keeping it non-nil because
// LUKS2 wants [] rather than null.
func unassign(refs []string, id int) []string {
	out := []string{}
	for _, r := range refs {
		if !hasRef([]string{r}, id) {
			out = append(out, r)
		}
	}
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
