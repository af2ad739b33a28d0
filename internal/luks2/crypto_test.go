package luks2

import (
	"bytes"
	"crypto/aes"
	stdpbkdf2 "crypto/pbkdf2"
	"encoding/binary"
	"encoding/hex"
	"testing"
	"time"

	"golang.org/x/crypto/xts"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestXTSIEEE1619 checks SectorCipher against the 512-byte vectors of IEEE
// P1619/D16 Annex B (vectors 4, 5 and 10): data units are whole sectors and
// the data unit sequence number is the plain64 IV.
func TestXTSIEEE1619(t *testing.T) {
	// Vector 4's plaintext is bytes 00..ff twice; vector 5's plaintext is
	// vector 4's ciphertext, and vector 10 reuses vector 4's plaintext.
	var pt []byte
	for i := 0; i < 512; i++ {
		pt = append(pt, byte(i))
	}
	ct4 := "27a7479befa1d476489f308cd4cfa6e2a96e4bbe3208ff25287dd3819616e89cc78cf7f5e543445f8333d8fa7f56000005279fa5d8b5e4ad40e736ddb4d35412328063fd2aab53e5ea1e0a9f332500a5df9487d07a5c92cc512c8866c7e860ce93fdf166a24912b422976146ae20ce846bb7dc9ba94a767aaef20c0d61ad02655ea92dc4c4e41a8952c651d33174be51a10c421110e6d81588ede82103a252d8a750e8768defffed9122810aaeb99f9172af82b604dc4b8e51bcb08235a6f4341332e4ca60482a4ba1a03b3e65008fc5da76b70bf1690db4eae29c5f1badd03c5ccf2a55d705ddcd86d449511ceb7ec30bf12b1fa35b913f9f747a8afd1b130e94bff94effd01a91735ca1726acd0b197c4e5b03393697e126826fb6bbde8ecc1e08298516e2c9ed03ff3c1b7860f6de76d4cecd94c8119855ef5297ca67e9f3e7ff72b1e99785ca0a7e7720c5b36dc6d72cac9574c8cbbc2f801e23e56fd344b07f22154beba0f08ce8891e643ed995c94d9a69c9f1b5f499027a78572aeebd74d20cc39881c213ee770b1010e4bea718846977ae119f7a023ab58cca0ad752afe656bb3c17256a9f6e9bf19fdd5a38fc82bbe872c5539edb609ef4f79c203ebb140f2e583cb2ad15b4aa5b655016a8449277dbd477ef2c8d6c017db738b18deb4a427d1923ce3ff262735779a418f20a282df920147beabe421ee5319d0568"
	ct5 := "264d3ca8512194fec312c8c9891f279fefdd608d0c027b60483a3fa811d65ee59d52d9e40ec5672d81532b38b6b089ce951f0f9c35590b8b978d175213f329bb1c2fd30f2f7f30492a61a532a79f51d36f5e31a7c9a12c286082ff7d2394d18f783e1a8e72c722caaaa52d8f065657d2631fd25bfd8e5baad6e527d763517501c68c5edc3cdd55435c532d7125c8614deed9adaa3acade5888b87bef641c4c994c8091b5bcd387f3963fb5bc37aa922fbfe3df4e5b915e6eb514717bdd2a74079a5073f5c4bfd46adf7d282e7a393a52579d11a028da4d9cd9c77124f9648ee383b1ac763930e7162a8d37f350b2f74b8472cf09902063c6b32e8c2d9290cefbd7346d1c779a0df50edcde4531da07b099c638e83a755944df2aef1aa31752fd323dcb710fb4bfbb9d22b925bc3577e1b8949e729a90bbafeacf7f7879e7b1147e28ba0bae940db795a61b15ecf4df8db07b824bb062802cc98a9545bb2aaeed77cb3fc6db15dcd7d80d7d5bc406c4970a3478ada8899b329198eb61c193fb6275aa8ca340344a75a862aebe92eee1ce032fd950b47d7704a3876923b4ad62844bf4a09c4dbe8b4397184b7471360c9564880aedddb9baa4af2e75394b08cd32ff479c57a07d3eab5d54de5f9738b8d27f27a9f0ab11799d7b7ffefb2704c95c6ad12c39f1e867a4b7b1d7818a4b753dfd2a89ccb45e001a03a867b187f225dd"
	ct10 := "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90c29a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed5376441a77ed43851ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151"
	key128 := "2718281828459045235360287471352631415926535897932384626433832795"
	key256 := "27182818284590452353602874713526624977572470936999595749669676273141592653589793238462643383279502884197169399375105820974944592"
	cases := []struct {
		name, key string
		sector    uint64
		pt, ct    []byte
	}{
		{"vector4", key128, 0, pt, unhex(t, ct4)},
		{"vector5", key128, 1, unhex(t, ct4), unhex(t, ct5)},
		{"vector10", key256, 0xff, pt, unhex(t, ct10)},
	}
	for _, tc := range cases {
		c, err := NewSectorCipher(CipherAESXTSPlain64, unhex(t, tc.key), 512, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 512)
		if err := c.Encrypt(out, tc.pt, tc.sector*512); err != nil || !bytes.Equal(out, tc.ct) {
			t.Errorf("%s: encrypt %v", tc.name, err)
		}
		if err := c.Decrypt(out, out, tc.sector*512); err != nil || !bytes.Equal(out, tc.pt) {
			t.Errorf("%s: decrypt %v", tc.name, err)
		}
	}
}

// TestPlain64LargeSectors pins down the IV rule for sectors above 512
// bytes: one XTS unit per sector, tweaked by the 512-byte sector number
// plus iv_tweak (dm-crypt without iv_large_sectors).
func TestPlain64LargeSectors(t *testing.T) {
	key := bytes.Repeat([]byte{0x42}, 64)
	ref, _ := xts.NewCipher(aes.NewCipher, key)
	data := make([]byte, 3*4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	c, err := NewSectorCipher(CipherAESXTSPlain64, key, 4096, 5)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if err := c.Encrypt(got, data, 8192); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		want := make([]byte, 4096)
		ref.Encrypt(want, data[i*4096:(i+1)*4096], uint64(8192+i*4096)/512+5)
		if !bytes.Equal(got[i*4096:(i+1)*4096], want) {
			t.Fatalf("sector %d differs from xts with IV (offset/512)+tweak", i)
		}
	}
	if err := c.Encrypt(got, data, 512); err == nil {
		t.Fatal("an offset inside a 4096-byte sector was accepted")
	}
	if err := c.Encrypt(got[:100], data[:100], 0); err == nil {
		t.Fatal("a partial sector was accepted")
	}
	if _, err := NewSectorCipher(CipherAESXTSPlain64, key[:16], 512, 0); err == nil {
		t.Fatal("a 128-bit XTS key was accepted")
	}
}

// TestPBKDF2 checks our []byte PBKDF2 against the standard library's and
// RFC 6070's first vector.
func TestPBKDF2(t *testing.T) {
	got := pbkdf2(hashFunc("sha1"), []byte("password"), []byte("salt"), 1, 20)
	if hex.EncodeToString(got) != "0c60c80f961f0e71f3a9b524af6012062fe037a6" {
		t.Fatalf("RFC 6070 vector 1: %x", got)
	}
	for _, h := range []string{"sha1", "sha256", "sha512"} {
		for _, n := range []int{16, 32, 64, 100} {
			got := pbkdf2(hashFunc(h), []byte("pw"), []byte("salty"), 1001, n)
			want, err := stdpbkdf2.Key(hashFunc(h), "pw", []byte("salty"), 1001, n)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s/%d differs from crypto/pbkdf2", h, n)
			}
		}
	}
}

func TestAF(t *testing.T) {
	for _, h := range []string{"sha1", "sha256", "sha512"} {
		for _, n := range []int{32, 48, 64, 33} {
			key := bytes.Repeat([]byte{byte(n)}, n)
			split, err := afSplit(key, afStripes, h)
			if err != nil || len(split) != n*afStripes {
				t.Fatalf("split: %d bytes, %v", len(split), err)
			}
			got, err := afMerge(split, n, afStripes, h)
			if err != nil || !bytes.Equal(got, key) {
				t.Fatalf("%s/%d: merge does not invert split", h, n)
			}
			split[n*1000] ^= 1
			if got, _ := afMerge(split, n, afStripes, h); bytes.Equal(got, key) {
				t.Fatalf("%s/%d: a damaged stripe still merged to the key", h, n)
			}
		}
	}
	if _, err := afSplit(make([]byte, 32), 10, "whirlpool"); err == nil {
		t.Fatal("unknown hash accepted")
	}
}

// TestAFDiffuseKnown pins diffuse to its definition on a 40-byte buffer
// (one whole sha256 block and an 8-byte tail).
func TestAFDiffuseKnown(t *testing.T) {
	b := make([]byte, 40)
	for i := range b {
		b[i] = byte(i)
	}
	want := make([]byte, 40)
	for i, chunk := range [][]byte{b[:32], b[32:]} {
		h := hashFunc("sha256")()
		var iv [4]byte
		binary.BigEndian.PutUint32(iv[:], uint32(i))
		h.Write(iv[:])
		h.Write(chunk)
		copy(want[32*i:], h.Sum(nil)[:len(chunk)])
	}
	diffuse(b, hashFunc("sha256"))
	if !bytes.Equal(b, want) {
		t.Fatal("diffuse")
	}
}

// TestPBKDFResolve: explicit costs are kept, cryptsetup's minimums are
// enforced, and benchmarking lands near the target.
func TestPBKDFResolve(t *testing.T) {
	k, err := fastArgon.resolve(64)
	if err != nil || k.Type != KDFArgon2id || k.Time != 4 || k.Memory != 32<<10 || k.CPUs != 1 {
		t.Fatalf("%+v %v", k, err)
	}
	for _, bad := range []PBKDF{
		{Type: KDFArgon2id, Iterations: 3, Memory: 1024},
		{Type: KDFArgon2i, Iterations: 4, Memory: 16},
		{Type: KDFPBKDF2, Iterations: 999},
		{Type: KDFPBKDF2, Hash: "md5", Iterations: 1000},
		{Type: "scrypt"},
	} {
		if _, err := bad.resolve(64); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	// Only loose properties are asserted: the machine running the tests is
	// shared, so the benchmark's timing is logged rather than checked.
	target := 150 * time.Millisecond
	for _, tc := range []struct {
		p          PBKDF
		wantMemory func(uint32) bool
	}{
		{PBKDF{Type: KDFPBKDF2, IterTime: target}, func(m uint32) bool { return m == 0 }},
		// Memory is the ceiling: a machine too slow (or a -race build)
		// for 4 passes over 16 MiB in the target gets less, as with
		// cryptsetup; it never gets more, nor less than the minimum.
		{PBKDF{Type: KDFArgon2id, Memory: 16 << 10, Parallel: 1, IterTime: target}, func(m uint32) bool { return m <= 16<<10 && m >= minArgon2Memory }},
		// 4 passes over 512 MiB take seconds anywhere, so memory must shrink.
		{PBKDF{Type: KDFArgon2i, Memory: 512 << 10, Parallel: 2, IterTime: target}, func(m uint32) bool { return m < 512<<10 && m >= minArgon2Memory }},
	} {
		k, err := tc.p.resolve(64)
		if err != nil {
			t.Fatal(err)
		}
		if k.Iterations < minPBKDF2Iter && k.Type == KDFPBKDF2 || k.Type != KDFPBKDF2 && k.Time < minArgon2Time || !tc.wantMemory(k.Memory) {
			t.Errorf("%s benchmarked to %+v", tc.p.Type, k)
		}
		k.Salt = make([]byte, 32)
		start := time.Now()
		key, err := k.derive([]byte("pw"), 64)
		clear(key)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: iterations %d time %d memory %d lanes %d took %v for a %v target", k.Type, k.Iterations, k.Time, k.Memory, k.CPUs, time.Since(start), target)
	}
	def, err := PBKDF{Iterations: 4}.resolve(64)
	if err != nil || def.Type != KDFArgon2id || def.Memory == 0 || def.Memory > defArgon2Memory || def.CPUs == 0 || def.CPUs > 4 {
		t.Fatalf("defaults: %+v %v", def, err)
	}
}
