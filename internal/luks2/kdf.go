package luks2

import (
	"bufio"
	"crypto/hmac"
	"encoding/binary"
	"fmt"
	"hash"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"
)

// KDF names as they appear in the header.
const (
	KDFArgon2id = "argon2id"
	KDFArgon2i  = "argon2i"
	KDFPBKDF2   = "pbkdf2"
)

// cryptsetup's limits and defaults (lib/libcryptsetup.h, lib/utils_pbkdf.c).
const (
	minArgon2Time     = 4
	minArgon2Memory   = 32
	maxArgon2Memory   = 4 << 20
	defArgon2Memory   = 1 << 20
	defArgon2Parallel = 4
	minPBKDF2Iter     = 1000
	defIterTime       = 2 * time.Second
	// digestIterTime is how long cryptsetup lets the volume-key digest
	// take: it only guards against a wrong key, the keyslot KDF is the
	// real work factor.
	digestIterTime = 125 * time.Millisecond
)

// PBKDF says how a keyslot turns a passphrase into the key that encrypts
// its area. The zero value means cryptsetup's defaults: argon2id, 1 GiB
// (capped at half the RAM), min(4, CPUs) lanes, with the pass count
// benchmarked so that unlocking takes about IterTime (2 s).
//
// Go's argon2 is roughly 2.3× slower than cryptsetup's, so a benchmarked
// count unlocks faster under cryptsetup than the target. Tests should set
// Iterations (and Memory) so nothing is benchmarked.
type PBKDF struct {
	Type string // KDFArgon2id (default), KDFArgon2i or KDFPBKDF2
	Hash string // pbkdf2 only: "sha256" (default), "sha512" or "sha1"
	// Iterations is the argon2 pass count (at least 4) or the pbkdf2
	// iteration count (at least 1000); 0 benchmarks against IterTime.
	Iterations uint32
	// Memory is argon2's cost in KiB (32 to 4 GiB). When benchmarking it
	// may be lowered, as cryptsetup does, to meet IterTime.
	Memory   uint32
	Parallel uint8 // argon2 lanes; 0 means min(4, NumCPU)
	IterTime time.Duration
}

// resolve fills defaults and benchmarks what was left to it, returning the
// header form of the KDF (without salt).
func (p PBKDF) resolve(keyLen int) (kdf, error) {
	if p.Type == "" {
		p.Type = KDFArgon2id
	}
	if p.IterTime <= 0 {
		p.IterTime = defIterTime
	}
	switch p.Type {
	case KDFPBKDF2:
		if p.Hash == "" {
			p.Hash = "sha256"
		}
		newHash := hashFunc(p.Hash)
		if newHash == nil {
			return kdf{}, fmt.Errorf("pbkdf2 hash %q: %w", p.Hash, ErrUnsupported)
		}
		if p.Iterations == 0 {
			p.Iterations = benchPBKDF2(newHash, keyLen, p.IterTime)
		}
		if p.Iterations < minPBKDF2Iter {
			return kdf{}, fmt.Errorf("pbkdf2 iterations %d below cryptsetup's minimum %d", p.Iterations, minPBKDF2Iter)
		}
		return kdf{Type: KDFPBKDF2, Hash: p.Hash, Iterations: p.Iterations}, nil
	case KDFArgon2i, KDFArgon2id:
		if p.Parallel == 0 {
			p.Parallel = uint8(min(defArgon2Parallel, runtime.NumCPU()))
		}
		benchmark := p.Iterations == 0
		if p.Memory == 0 {
			p.Memory = min(defArgon2Memory, halfRAM())
		}
		if p.Memory < minArgon2Memory || p.Memory > maxArgon2Memory {
			return kdf{}, fmt.Errorf("argon2 memory %d KiB outside [%d, %d]", p.Memory, minArgon2Memory, maxArgon2Memory)
		}
		if benchmark {
			p.Iterations, p.Memory = benchArgon2(p.Type, p.Memory, p.Parallel, p.IterTime)
		}
		if p.Iterations < minArgon2Time {
			return kdf{}, fmt.Errorf("argon2 time %d below cryptsetup's minimum %d", p.Iterations, minArgon2Time)
		}
		return kdf{Type: p.Type, Time: p.Iterations, Memory: p.Memory, CPUs: uint32(p.Parallel)}, nil
	}
	return kdf{}, fmt.Errorf("kdf %q: %w", p.Type, ErrUnsupported)
}

// derive runs the keyslot KDF. The caller zeroes the result.
func (k *kdf) derive(passphrase []byte, keyLen int) ([]byte, error) {
	switch k.Type {
	case KDFPBKDF2:
		newHash := hashFunc(k.Hash)
		if newHash == nil {
			return nil, fmt.Errorf("pbkdf2 hash %q: %w", k.Hash, ErrUnsupported)
		}
		return pbkdf2(newHash, passphrase, k.Salt, int(k.Iterations), keyLen), nil
	case KDFArgon2i:
		return argon2.Key(passphrase, k.Salt, k.Time, k.Memory, uint8(k.CPUs), uint32(keyLen)), nil
	case KDFArgon2id:
		return argon2.IDKey(passphrase, k.Salt, k.Time, k.Memory, uint8(k.CPUs), uint32(keyLen)), nil
	}
	return nil, fmt.Errorf("kdf %q: %w", k.Type, ErrUnsupported)
}

// pbkdf2 is RFC 8018 PBKDF2 with HMAC. It is written out rather than taken
// from crypto/pbkdf2 because that one takes the password as a string,
// which leaves an unzeroable copy of the passphrase on the heap.
func pbkdf2(newHash func() hash.Hash, password, salt []byte, iter, keyLen int) []byte {
	prf := hmac.New(newHash, password)
	hLen := prf.Size()
	out := make([]byte, 0, (keyLen+hLen-1)/hLen*hLen)
	u := make([]byte, 0, hLen)
	t := make([]byte, hLen)
	var ctr [4]byte
	for block := uint32(1); len(out) < keyLen; block++ {
		binary.BigEndian.PutUint32(ctr[:], block)
		prf.Reset()
		prf.Write(salt)
		prf.Write(ctr[:])
		u = prf.Sum(u[:0])
		copy(t, u)
		for i := 1; i < iter; i++ {
			prf.Reset()
			prf.Write(u)
			u = prf.Sum(u[:0])
			xorInto(t, u)
		}
		out = append(out, t...)
	}
	clear(u)
	clear(t)
	tail := out[keyLen:cap(out)]
	clear(tail)
	return out[:keyLen]
}

// benchPBKDF2 estimates the iteration count that takes target, as
// cryptsetup's benchmark does, from a run long enough to time reliably.
func benchPBKDF2(newHash func() hash.Hash, keyLen int, target time.Duration) uint32 {
	pw, salt := []byte("benchmark"), make([]byte, 32)
	iter := 1000
	for {
		start := time.Now()
		clear(pbkdf2(newHash, pw, salt, iter, keyLen))
		el := time.Since(start)
		if el >= 20*time.Millisecond || iter >= 1<<24 {
			n := float64(iter) * float64(target) / float64(el)
			return uint32(max(min(n, 1<<31), minPBKDF2Iter))
		}
		iter *= 4
	}
}

// benchArgon2 follows cryptsetup's strategy: keep the memory and raise the
// pass count while that fits the target; if even the minimum pass count is
// too slow, keep 4 passes and shrink the memory instead. The time is
// modelled as a·m (allocating and faulting in the memory) plus b·t·m (the
// passes), fitted from 1-pass and 3-pass runs over a smaller buffer, after
// a warm-up run, taking the faster of two runs to damp noise from other
// load.
func benchArgon2(typ string, memory uint32, lanes uint8, target time.Duration) (uint32, uint32) {
	probe := min(memory, 64<<10)
	run := func(passes uint32) float64 {
		k := kdf{Type: typ, Time: passes, Memory: probe, CPUs: uint32(lanes), Salt: make([]byte, 32)}
		start := time.Now()
		key, _ := k.derive([]byte("benchmark"), 32)
		clear(key)
		return float64(time.Since(start))
	}
	run(1)
	t1, t3 := min(run(1), run(1)), min(run(3), run(3))
	b := (t3 - t1) / (2 * float64(probe))
	if b <= 0 {
		b = t3 / (3 * float64(probe))
	}
	a := max(t1/float64(probe)-b, 0)
	m := float64(memory)
	if passes := (float64(target)/m - a) / b; passes >= minArgon2Time {
		return uint32(min(passes, 1<<20)), memory
	}
	m = float64(target) / (a + minArgon2Time*b)
	return minArgon2Time, uint32(max(min(m, float64(memory)), minArgon2Memory))
}

// halfRAM is cryptsetup's cap on the default argon2 memory, in KiB, so a
// header formatted on a big machine still opens on the same machine under
// memory pressure.
func halfRAM() uint32 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return defArgon2Memory
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil && kib > 0 {
				return uint32(min(kib/2, maxArgon2Memory))
			}
		}
	}
	return defArgon2Memory
}
