package luks2

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// TestSectorsMatchCryptsetup checks our data encryption against
// cryptsetup's offline re-encryption, which writes exactly what dm-crypt
// would (same cipher spec and IV rules) without needing device-mapper. With
// a detached header the data starts at offset 0 of its own file.
//
//   - cryptsetup → us: cryptsetup encrypts a known plaintext in place; we
//     unlock its header and decrypt the file back to the plaintext.
//   - us → cryptsetup: we format a detached header and encrypt the
//     plaintext; cryptsetup decrypts the file in place to the plaintext.
func TestSectorsMatchCryptsetup(t *testing.T) {
	needCryptsetup(t)
	plain := make([]byte, 1<<20)
	for i := range plain {
		plain[i] = byte(i*31 + i>>9)
	}
	for _, tc := range []struct{ key, sector int }{{256, 512}, {512, 512}, {256, 4096}, {512, 4096}} {
		t.Run(strconv.Itoa(tc.key)+"-"+strconv.Itoa(tc.sector), func(t *testing.T) {
			dir := t.TempDir()
			data, hdr := filepath.Join(dir, "data.img"), filepath.Join(dir, "hdr.img")
			if err := os.WriteFile(data, plain, 0o600); err != nil {
				t.Fatal(err)
			}
			csOK(t, "pw", "reencrypt", "--encrypt", "--type", "luks2", "--header", hdr, "--key-file=-", "-q",
				"--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000",
				"--key-size", strconv.Itoa(tc.key), "--sector-size", strconv.Itoa(tc.sector), data)
			enc, _ := os.ReadFile(data)
			if bytes.Equal(enc[:4096], plain[:4096]) {
				t.Fatal("cryptsetup left the data in the clear")
			}
			hf, err := os.Open(hdr)
			if err != nil {
				t.Fatal(err)
			}
			defer hf.Close()
			vk, _, err := Unlock(hf, []byte("pw"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := mustRead(t, hf).SectorCipher(vk)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(enc))
			if err := c.Decrypt(got, enc, 0); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("our decryption of cryptsetup's sectors differs (%v)", err)
			}
			// Our encryption of the plaintext is byte for byte cryptsetup's.
			if err := c.Encrypt(got, plain, 0); err != nil || !bytes.Equal(got, enc) {
				t.Fatalf("our encryption differs from cryptsetup's (%v)", err)
			}

			data2, hdr2 := filepath.Join(dir, "data2.img"), filepath.Join(dir, "hdr2.img")
			h2, err := os.Create(hdr2)
			if err != nil {
				t.Fatal(err)
			}
			defer h2.Close()
			vk2, err := Format(h2, nil, []byte("pw2"), FormatOptions{DetachedHeader: true, KeySize: tc.key, SectorSize: tc.sector, PBKDF: fastPBKDF2, DigestIterations: 1000})
			if err != nil {
				t.Fatal(err)
			}
			c2, _ := mustRead(t, h2).SectorCipher(vk2)
			enc2 := make([]byte, len(plain))
			if err := c2.Encrypt(enc2, plain, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(data2, enc2, 0o600); err != nil {
				t.Fatal(err)
			}
			// On a file cryptsetup cannot tell whether the device is active
			// and wants to be told the re-encryption is offline.
			csOK(t, "pw2", "reencrypt", "--decrypt", "--header", hdr2, "--key-file=-", "-q", "--force-offline-reencrypt", data2)
			if back, _ := os.ReadFile(data2); !bytes.Equal(back, plain) {
				t.Fatal("cryptsetup's decryption of our sectors is not the plaintext")
			}
		})
	}
}

// TestRepairMatchesCryptsetup damages one header copy of our volume, checks
// that we fall back to the other copy, then repairs one image with
// cryptsetup and an identical one with Repair: the results differ only in
// the rewritten copy's random salt and its checksum.
func TestRepairMatchesCryptsetup(t *testing.T) {
	needCryptsetup(t)
	cases := []struct {
		name   string
		offset int64
		copyAt int64 // the copy that gets rewritten
		theirs bool  // cryptsetup formats (its JSON text, not ours)
	}{
		{"primary-json", 4096 + 100, 0, false},
		{"primary-label", offLabel, 0, false},
		{"secondary-json", DefaultMetadataSize + 4096 + 100, DefaultMetadataSize, false},
		{"secondary-seqid", DefaultMetadataSize + offSeqID + 7, DefaultMetadataSize, false},
		{"cryptsetup-primary-json", 4096 + 100, 0, true},
		{"cryptsetup-secondary-csum", DefaultMetadataSize + offCsum + 3, DefaultMetadataSize, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f *os.File
			var vk []byte
			if tc.theirs {
				f = newImage(t, 20<<20)
				csOK(t, "p", "luksFormat", "--type", "luks2", "-q", "--key-file=-", "--label", "STATE",
					"--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", f.Name())
				vk = csVolumeKey(t, f.Name(), "p")
				csOK(t, "", "luksAddKey", "-q", "--key-file", writeTemp(t, "p"), "--key-slot", "1",
					"--pbkdf", "argon2id", "--pbkdf-memory", "32768", "--pbkdf-force-iterations", "4", f.Name(), writeTemp(t, "q"))
				csOK(t, talosKMSToken, "token", "import", "--token-id", "1", "--json-file=-", f.Name())
			} else {
				f, vk = formatted(t, "p", FormatOptions{Label: "STATE"})
				if _, err := AddKey(f, []byte("p"), []byte("q"), 1, fastArgon); err != nil {
					t.Fatal(err)
				}
				if err := SetToken(f, 1, []byte(talosKMSToken)); err != nil {
					t.Fatal(err)
				}
			}
			b := readAt(t, f, tc.offset, 1)
			writeAt(t, f, tc.offset, []byte{b[0] ^ 0x20})

			// Ours first: cryptsetup repairs silently on any load.
			h := mustRead(t, f)
			if (h.PrimaryErr != nil) != (tc.copyAt == 0) || (h.SecondaryErr != nil) != (tc.copyAt != 0) {
				t.Fatalf("primary %v, secondary %v", h.PrimaryErr, h.SecondaryErr)
			}
			if got, s, err := Unlock(f, []byte("q")); err != nil || s != 1 || !bytes.Equal(got, vk) {
				t.Fatalf("Unlock on the surviving copy: %v", err)
			}

			damaged := readAt(t, f, 0, 20<<20)
			a := filepath.Join(t.TempDir(), "a.img")
			if err := os.WriteFile(a, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			csOK(t, "", "repair", "-q", a)
			if fixed, err := Repair(f); err != nil || !fixed {
				t.Fatalf("Repair = %v, %v", fixed, err)
			}
			theirs, _ := os.ReadFile(a)
			ours := readAt(t, f, 0, 20<<20)
			for _, r := range [][2]int64{{tc.copyAt + offSalt, tc.copyAt + offSalt + lenSalt}, {tc.copyAt + offCsum, tc.copyAt + offCsum + lenCsum}} {
				copy(theirs[r[0]:r[1]], ours[r[0]:r[1]])
			}
			if i := firstDiff(theirs, ours); i >= 0 {
				t.Fatalf("repairs differ at byte %d (beyond the new salt and checksum)", i)
			}
			// cryptsetup finds nothing left to repair in ours.
			before := readAt(t, f, 0, 2*DefaultMetadataSize)
			csOK(t, "", "luksDump", f.Name())
			if rc := csTestPass(t, f.Name(), "p", 0); rc != 0 {
				t.Fatalf("test-passphrase after our repair: exit %d", rc)
			}
			if after := readAt(t, f, 0, 2*DefaultMetadataSize); !bytes.Equal(before, after) {
				t.Fatal("cryptsetup rewrote our repaired header")
			}
			if h := mustRead(t, f); h.NeedsRepair() || h.Label != "STATE" {
				t.Fatalf("after repair: %v %v %q", h.PrimaryErr, h.SecondaryErr, h.Label)
			}
		})
	}

	t.Run("both", func(t *testing.T) {
		f, _ := formatted(t, "p", FormatOptions{})
		writeAt(t, f, 4096+100, []byte{'#'})
		writeAt(t, f, DefaultMetadataSize+4096+100, []byte{'#'})
		if _, err := ReadHeader(f); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ReadHeader: %v", err)
		}
		if _, rc := cs(t, "", "luksDump", f.Name()); rc == 0 {
			t.Fatal("cryptsetup accepted a header with both copies damaged")
		}
		if _, rc := cs(t, "", "repair", "-q", f.Name()); rc == 0 {
			t.Fatal("cryptsetup repaired a header with both copies damaged")
		}
	})
}

func firstDiff(a, b []byte) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestCryptsetupLayout formats the same options with cryptsetup and with
// us: the JSON metadata is identical once salts and digests are blanked,
// and so is the binary header apart from seqid, salt and checksum.
func TestCryptsetupLayout(t *testing.T) {
	needCryptsetup(t)
	const uuid = "5e1ec7ed-0000-4000-8000-00000000cafe"
	for _, tc := range layoutCases {
		t.Run(tc.name, func(t *testing.T) {
			theirs := newImage(t, 40<<20)
			args := append([]string{"luksFormat", "--type", "luks2", "-q", "--key-file=-", "--sector-size", "512",
				"--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "--uuid", uuid, "--label", "L", "--subsystem", "S"}, tc.args...)
			csOK(t, "p", append(args, theirs.Name())...)

			ours := newImage(t, 40<<20)
			o := tc.opts
			o.UUID, o.Label, o.Subsystem, o.PBKDF, o.DigestIterations = uuid, "L", "S", fastPBKDF2, 1000
			if _, err := Format(ours, nil, []byte("p"), o); err != nil {
				t.Fatal(err)
			}
			a, b := csJSON(t, theirs.Name()), csJSON(t, ours.Name())
			blank(a)
			blank(b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("metadata differs:\ncryptsetup %v\nours       %v", a, b)
			}
			if seg := get(b, "segments", "0", "offset"); seg != strconv.FormatUint(tc.dataOffset, 10) {
				t.Fatalf("data offset %v", seg)
			}
			size := int(mustRead(t, ours).MetadataSize)
			for _, off := range []int{0, size} {
				x, y := readAt(t, theirs, int64(off), 4096), readAt(t, ours, int64(off), 4096)
				for _, r := range [][2]int{{offSeqID, offSeqID + 8}, {offSalt, offSalt + lenSalt}, {offCsum, offCsum + lenCsum}} {
					copy(x[r[0]:r[1]], y[r[0]:r[1]])
				}
				if i := firstDiff(x, y); i >= 0 {
					t.Fatalf("binary header at %d differs at byte %d", off, i)
				}
			}
		})
	}
}

// blank removes the random members (salts, digests) from a metadata tree.
func blank(m any) {
	switch v := m.(type) {
	case map[string]any:
		delete(v, "salt")
		delete(v, "digest")
		for _, c := range v {
			blank(c)
		}
	case []any:
		for _, c := range v {
			blank(c)
		}
	}
}
