package luks2

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash"
)

// The anti-forensic splitter (LUKS1's "luks1" AF type, kept by LUKS2): the
// key is spread over stripes blocks such that all of them are needed to
// recover it, so destroying any part of a keyslot area destroys the key even
// on media that remap sectors.

// afStripes is what cryptsetup writes for every keyslot.
const afStripes = 4000

// afSplit returns stripes*len(key) bytes from which afMerge recovers key.
// Every block but the last is random; the last is key XOR the diffused
// running XOR of the others.
func afSplit(key []byte, stripes int, hashName string) ([]byte, error) {
	newHash := hashFunc(hashName)
	if newHash == nil {
		return nil, fmt.Errorf("af hash %q: %w", hashName, ErrUnsupported)
	}
	n := len(key)
	out := make([]byte, n*stripes)
	acc := make([]byte, n)
	defer clear(acc)
	rand.Read(out[:n*(stripes-1)])
	for i := 0; i < stripes-1; i++ {
		xorInto(acc, out[i*n:(i+1)*n])
		diffuse(acc, newHash)
	}
	last := out[(stripes-1)*n:]
	for i := range last {
		last[i] = acc[i] ^ key[i]
	}
	return out, nil
}

// afMerge recovers a keySize-byte key from split material. The caller
// zeroes the result.
func afMerge(split []byte, keySize, stripes int, hashName string) ([]byte, error) {
	newHash := hashFunc(hashName)
	if newHash == nil {
		return nil, fmt.Errorf("af hash %q: %w", hashName, ErrUnsupported)
	}
	if len(split) < keySize*stripes {
		return nil, fmt.Errorf("af material is %d bytes, need %d", len(split), keySize*stripes)
	}
	acc := make([]byte, keySize)
	for i := 0; i < stripes-1; i++ {
		xorInto(acc, split[i*keySize:(i+1)*keySize])
		diffuse(acc, newHash)
	}
	xorInto(acc, split[(stripes-1)*keySize:stripes*keySize])
	return acc, nil
}

func xorInto(dst, src []byte) {
	for i := range dst {
		dst[i] ^= src[i]
	}
}

// diffuse replaces each digest-sized chunk of b (the last one possibly
// short) with H(be32(chunk index) || chunk), truncated to the chunk length.
func diffuse(b []byte, newHash func() hash.Hash) {
	h := newHash()
	ds := h.Size()
	var iv [4]byte
	var sum []byte
	for i, off := 0, 0; off < len(b); i, off = i+1, off+ds {
		end := min(off+ds, len(b))
		h.Reset()
		binary.BigEndian.PutUint32(iv[:], uint32(i))
		h.Write(iv[:])
		h.Write(b[off:end])
		sum = h.Sum(sum[:0])
		copy(b[off:end], sum)
	}
	clear(sum)
}
