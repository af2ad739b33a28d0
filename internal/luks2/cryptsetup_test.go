package luks2

// Debian's cryptsetup (cryptsetup-bin) is the judge of interoperability.
// Everything here runs on plain image files: cryptsetup formats, dumps,
// tests passphrases, adds and kills keyslots, imports tokens, repairs and
// re-encrypts offline without device-mapper, loop devices or root.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// libdevmapper creates /dev/mapper/control even for --test-passphrase;
	// the host kernel has no device-mapper, so the node is stale. Remove it
	// (and the directory) only if this run created it.
	_, dirErr := os.Stat("/dev/mapper")
	_, ctlErr := os.Stat("/dev/mapper/control")
	code := m.Run()
	if os.IsNotExist(ctlErr) {
		os.Remove("/dev/mapper/control")
	}
	if os.IsNotExist(dirErr) {
		os.Remove("/dev/mapper")
	}
	os.Exit(code)
}

func needCryptsetup(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("cryptsetup"); err != nil {
		t.Skip("cryptsetup is not installed (scripts/install-deps.sh installs cryptsetup-bin)")
	}
}

// cs runs cryptsetup with stdin and returns its combined output and exit
// code.
func cs(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("cryptsetup", args...)
	cmd.Stdin = strings.NewReader(stdin)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
		}
	}()
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		t.Fatalf("cryptsetup %v: %v", args, err)
	}
	return string(out), 0
}

func csOK(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, rc := cs(t, stdin, args...)
	if rc != 0 {
		t.Fatalf("cryptsetup %s: exit %d: %s", strings.Join(args, " "), rc, out)
	}
	return out
}

func csJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	var m map[string]any
	out := csOK(t, "", "luksDump", "--dump-json-metadata", path)
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("cryptsetup JSON: %v: %s", err, out)
	}
	return m
}

// csVolumeKey is cryptsetup's answer to "what volume key does this
// passphrase open".
func csVolumeKey(t *testing.T, path, pass string) []byte {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "vk")
	csOK(t, pass, "luksDump", "--dump-volume-key", "-q", "--key-file=-", "--volume-key-file", keyFile, path)
	vk, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return vk
}

// csTestPass runs open --test-passphrase and returns the exit code (0 ok,
// 2 wrong passphrase).
func csTestPass(t *testing.T, path, pass string, slot int) int {
	t.Helper()
	args := []string{"open", "--test-passphrase", "--key-file=-", path}
	if slot != AnySlot {
		args = append(args, "--key-slot", strconv.Itoa(slot))
	}
	_, rc := cs(t, pass, args...)
	return rc
}

func get(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

func keysOf(m any) []string {
	mm, _ := m.(map[string]any)
	var ks []string
	for k := range mm {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

const talosKMSToken = `{"UserData":{"sealedData":"c2VhbGVkIGJ5IEtNUw=="},"type":"sideroKMS","keyslots":[]}`

// TestCryptsetupOpensOurs: headers we format and extend are parsed by
// cryptsetup, every keyslot opens with its passphrase (and only with it),
// the volume key cryptsetup recovers is ours, and our token is shown.
func TestCryptsetupOpensOurs(t *testing.T) {
	needCryptsetup(t)
	cases := []struct {
		name         string
		keySize      int
		sector       int
		kdf0, kdf3   PBKDF
		wantKDF0Type string
	}{
		{"argon2id-512-4096", 512, 4096, PBKDF{Type: KDFArgon2id, Iterations: 4, Memory: 32 << 10, Parallel: 4}, PBKDF{Type: KDFPBKDF2, Iterations: 1000}, "argon2id"},
		{"argon2i-256-512", 256, 512, PBKDF{Type: KDFArgon2i, Iterations: 5, Memory: 32 << 10, Parallel: 2}, fastArgon, "argon2i"},
		{"pbkdf2-sha256-512-512", 512, 512, PBKDF{Type: KDFPBKDF2, Hash: "sha256", Iterations: 1234}, PBKDF{Type: KDFArgon2i, Iterations: 4, Memory: 8 << 10, Parallel: 1}, "pbkdf2"},
		{"pbkdf2-sha512-256-4096", 256, 4096, PBKDF{Type: KDFPBKDF2, Hash: "sha512", Iterations: 1000}, PBKDF{Type: KDFPBKDF2, Hash: "sha1", Iterations: 1000}, "pbkdf2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newImage(t, 20<<20)
			vk, err := Format(f, nil, []byte("zero"), FormatOptions{
				KeySize: tc.keySize, SectorSize: tc.sector, PBKDF: tc.kdf0, DigestIterations: 1000,
				Label: "talos-STATE", Subsystem: "talosbox",
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := AddKey(f, []byte("zero"), []byte("three"), 3, tc.kdf3); err != nil {
				t.Fatal(err)
			}
			if err := SetToken(f, 3, []byte(talosKMSToken)); err != nil {
				t.Fatal(err)
			}
			h := mustRead(t, f)
			path := f.Name()

			dump := csOK(t, "", "luksDump", path)
			for _, want := range []string{"UUID:          \t" + h.UUID, "Label:         \ttalos-STATE", "Subsystem:     \ttalosbox", "  3: sideroKMS", fmt.Sprintf("sector: %d [bytes]", tc.sector)} {
				if !strings.Contains(dump, want) {
					t.Errorf("luksDump lacks %q:\n%s", want, dump)
				}
			}
			js := csJSON(t, path)
			if ks := keysOf(js["keyslots"]); !reflect.DeepEqual(ks, []string{"0", "3"}) {
				t.Errorf("cryptsetup sees keyslots %v", ks)
			}
			if typ := get(js, "keyslots", "0", "kdf", "type"); typ != tc.wantKDF0Type {
				t.Errorf("kdf type %v", typ)
			}
			if ks := get(js, "keyslots", "0", "key_size"); ks != float64(tc.keySize/8) {
				t.Errorf("key_size %v", ks)
			}
			tok, _ := json.Marshal(get(js, "tokens", "3"))
			if !jsonEqual(t, tok, []byte(talosKMSToken)) {
				t.Errorf("token 3 as cryptsetup reads it: %s", tok)
			}

			for _, c := range []struct {
				pass   string
				slot   int
				wantOK bool
			}{{"zero", 0, true}, {"three", 3, true}, {"three", AnySlot, true}, {"three", 0, false}, {"zero", 3, false}, {"wrong", AnySlot, false}} {
				rc := csTestPass(t, path, c.pass, c.slot)
				if (rc == 0) != c.wantOK || !c.wantOK && c.slot == AnySlot && rc != 2 {
					t.Errorf("test-passphrase %q slot %d: exit %d", c.pass, c.slot, rc)
				}
			}
			if got := csVolumeKey(t, path, "three"); !bytes.Equal(got, vk) {
				t.Error("cryptsetup recovers a different volume key")
			}
		})
	}
}

// TestWeOpenCryptsetups: headers cryptsetup formats (and extends) open
// here to the volume key cryptsetup itself dumps.
func TestWeOpenCryptsetups(t *testing.T) {
	needCryptsetup(t)
	cases := []struct {
		name   string
		args   []string
		key    int
		sector int
	}{
		{"argon2id-512-4096", []string{"--pbkdf", "argon2id", "--pbkdf-memory", "32768", "--pbkdf-force-iterations", "4", "--pbkdf-parallel", "2"}, 512, 4096},
		{"argon2i-256-512", []string{"--pbkdf", "argon2i", "--pbkdf-memory", "32768", "--pbkdf-force-iterations", "4", "--pbkdf-parallel", "1"}, 256, 512},
		{"argon2id-itertime", []string{"--pbkdf", "argon2id", "--pbkdf-memory", "16384", "--iter-time", "100"}, 512, 512},
		{"pbkdf2-sha256-512-512", []string{"--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"}, 512, 512},
		{"pbkdf2-sha512-256-4096", []string{"--pbkdf", "pbkdf2", "--hash", "sha512", "--pbkdf-force-iterations", "1000"}, 256, 4096},
		{"pbkdf2-sha1-512-4096", []string{"--pbkdf", "pbkdf2", "--hash", "sha1", "--pbkdf-force-iterations", "1000"}, 512, 4096},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newImage(t, 20<<20)
			path := f.Name()
			args := append([]string{"luksFormat", "--type", "luks2", "-q", "--key-file=-",
				"--key-size", strconv.Itoa(tc.key), "--sector-size", strconv.Itoa(tc.sector)}, tc.args...)
			csOK(t, "cs-pass", append(args, path)...)
			want := csVolumeKey(t, path, "cs-pass")

			got, slot, err := Unlock(f, []byte("cs-pass"))
			if err != nil || slot != 0 || !bytes.Equal(got, want) {
				t.Fatalf("Unlock: slot %d, equal %v, %v", slot, bytes.Equal(got, want), err)
			}
			if _, _, err := Unlock(f, []byte("cs-pas")); !errors.Is(err, ErrWrongKey) {
				t.Fatalf("wrong passphrase: %v", err)
			}
			seg, err := mustRead(t, f).Segment()
			if err != nil || seg.SectorSize != tc.sector || seg.Offset != DefaultDataOffset || seg.Cipher != CipherAESXTSPlain64 {
				t.Fatalf("segment %+v %v", seg, err)
			}

			// A second benchmark would only cost time; forced costs keep the
			// slot's KDF type.
			kdfArgs := tc.args
			if slices.Contains(kdfArgs, "--iter-time") {
				kdfArgs = []string{"--pbkdf", "argon2id", "--pbkdf-memory", "8192", "--pbkdf-force-iterations", "4"}
			}
			addArgs := append([]string{"luksAddKey", "-q", "--key-file", writeTemp(t, "cs-pass"), "--key-slot", "5"}, kdfArgs...)
			csOK(t, "", append(addArgs, path, writeTemp(t, "five"))...)
			got, slot, err = Unlock(f, []byte("five"))
			if err != nil || slot != 5 || !bytes.Equal(got, want) {
				t.Fatalf("Unlock of cryptsetup's slot 5: slot %d, %v", slot, err)
			}
		})
	}
}

// TestAddRemoveSeenByCryptsetup: keyslots we add and remove are exactly
// what cryptsetup then finds, and the other way round (a full rotation).
func TestAddRemoveSeenByCryptsetup(t *testing.T) {
	needCryptsetup(t)
	f := newImage(t, 20<<20)
	path := f.Name()
	csOK(t, "a", "luksFormat", "--type", "luks2", "-q", "--key-file=-", "--sector-size", "512",
		"--pbkdf", "argon2id", "--pbkdf-memory", "32768", "--pbkdf-force-iterations", "4", "--pbkdf-parallel", "1", path)
	vk := csVolumeKey(t, path, "a")

	if _, err := AddKey(f, []byte("a"), []byte("b"), 2, fastArgon); err != nil {
		t.Fatal(err)
	}
	if rc := csTestPass(t, path, "b", 2); rc != 0 {
		t.Fatalf("cryptsetup rejects our slot 2: exit %d", rc)
	}
	if err := RemoveKey(f, 0); err != nil {
		t.Fatal(err)
	}
	js := csJSON(t, path)
	if ks := keysOf(js["keyslots"]); !reflect.DeepEqual(ks, []string{"2"}) {
		t.Fatalf("after RemoveKey(0) cryptsetup sees keyslots %v", ks)
	}
	if d := get(js, "digests", "0", "keyslots"); !reflect.DeepEqual(d, []any{"2"}) {
		t.Fatalf("digest keyslots %v", d)
	}
	if rc := csTestPass(t, path, "a", AnySlot); rc != 2 {
		t.Fatalf("removed passphrase: exit %d", rc)
	}

	// cryptsetup adds into the lowest free slot, which is the one we freed.
	csOK(t, "", "luksAddKey", "-q", "--key-file", writeTemp(t, "b"), "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", path, writeTemp(t, "c"))
	if _, s, err := Unlock(f, []byte("c")); err != nil || s != 0 {
		t.Fatalf("cryptsetup's new key: slot %d, %v", s, err)
	}
	csOK(t, "", "luksKillSlot", "-q", path, "2")
	if ids := slotIDs(mustRead(t, f)); !reflect.DeepEqual(ids, []int{0}) {
		t.Fatalf("after luksKillSlot 2 we see %v", ids)
	}
	if _, _, err := Unlock(f, []byte("b")); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("killed passphrase: %v", err)
	}
	if s, err := AddKey(f, []byte("c"), []byte("d"), AnySlot, fastPBKDF2); err != nil || s != 1 {
		t.Fatalf("AddKey: %d %v", s, err)
	}
	if got := csVolumeKey(t, path, "d"); !bytes.Equal(got, vk) {
		t.Fatal("volume key changed along the rotation")
	}
}

// TestTokensSeenByCryptsetup: tokens pass both ways and follow keyslot
// removal as cryptsetup's own do.
func TestTokensSeenByCryptsetup(t *testing.T) {
	needCryptsetup(t)
	f, _ := formatted(t, "p", FormatOptions{})
	path := f.Name()
	if err := SetToken(f, 3, []byte(talosKMSToken)); err != nil {
		t.Fatal(err)
	}
	out := csOK(t, "", "token", "export", "--token-id", "3", path)
	if !jsonEqual(t, []byte(out), []byte(talosKMSToken)) {
		t.Fatalf("cryptsetup exports %s", out)
	}
	tpm := `{"type":"talos-tpm2","keyslots":["0"],"UserData":{"keyslots":[0],"pcrs":[11],"alg":"sha256","sealed_blob_private":"cHJpdg==","sealed_blob_public":"cHVi","policy_hash":"aGFzaA==","key_name":"bmFtZQ=="}}`
	csOK(t, tpm, "token", "import", "--token-id", "5", "--json-file=-", path)
	toks, err := Tokens(f)
	if err != nil || !jsonEqual(t, toks[5], []byte(tpm)) {
		t.Fatalf("we read token 5 as %s (%v)", toks[5], err)
	}
	if _, err := AddKey(f, []byte("p"), []byte("q"), 1, fastPBKDF2); err != nil {
		t.Fatal(err)
	}
	if err := RemoveKey(f, 0); err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	json.Unmarshal([]byte(csOK(t, "", "token", "export", "--token-id", "5", path)), &tok)
	if ks, ok := tok["keyslots"].([]any); !ok || len(ks) != 0 {
		t.Fatalf("token 5 after removing slot 0: %v", tok)
	}
	if err := RemoveToken(f, 3); err != nil {
		t.Fatal(err)
	}
	if _, rc := cs(t, "", "token", "export", "--token-id", "3", path); rc == 0 {
		t.Fatal("cryptsetup still exports the removed token 3")
	}
	csOK(t, "", "token", "remove", "--token-id", "5", path)
	if toks, _ := Tokens(f); len(toks) != 0 {
		t.Fatalf("tokens after cryptsetup removed token 5: %v", toks)
	}
}

func slotIDs(h *Header) []int {
	var ids []int
	for _, k := range h.Keyslots() {
		ids = append(ids, k.ID)
	}
	return ids
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
