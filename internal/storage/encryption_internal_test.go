package storage

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/luks2"
)

// testKDF keeps the tests fast; the node's own cost is nodePBKDF.
var testKDF = luks2.PBKDF{Type: luks2.KDFPBKDF2, Iterations: 1000}

const testUUID = "8c2a9f3e-41d7-4b6a-9e0f-5d3c2b1a0f9e"

func staticKey(slot int, pass string) configs.EncryptionKey {
	return configs.EncryptionKey{Slot: slot, Static: &configs.EncryptionKeyStatic{Passphrase: pass}}
}

func nodeIDKeyCfg(slot int) configs.EncryptionKey {
	return configs.EncryptionKey{Slot: slot, NodeID: &configs.EncryptionKeyNodeID{}}
}

func TestVolumeKeys(t *testing.T) {
	for _, c := range []struct {
		name string
		keys []configs.EncryptionKey
		uuid string
		want []string // kind:slot:passphrase
		err  string
	}{
		{"slot order", []configs.EncryptionKey{staticKey(3, "b"), nodeIDKeyCfg(0)}, testUUID,
			[]string{"nodeID:0:" + testUUID + "EPHEMERAL", "static:3:b"}, ""},
		{"zero uuid fails the entropy check", []configs.EncryptionKey{nodeIDKeyCfg(0)}, "00000000-0000-0000-0000-000000000000", nil, "entropy check failed"},
		{"no uuid", []configs.EncryptionKey{nodeIDKeyCfg(0)}, "", nil, "the machine has no UUID"},
		{"kms", []configs.EncryptionKey{{Slot: 1, KMS: &configs.EncryptionKeyKMS{Endpoint: "x"}}}, testUUID, nil, "slot 1: a kms key is not supported"},
		{"lockToState", []configs.EncryptionKey{{Slot: 0, NodeID: &configs.EncryptionKeyNodeID{}, LockToState: true}}, testUUID, nil, "lockToState is not supported"},
		{"none", nil, testUUID, nil, "no keys configured"},
	} {
		t.Run(c.name, func(t *testing.T) {
			keys, err := volumeKeys(&configs.EncryptionConfig{Keys: c.keys}, "EPHEMERAL", c.uuid)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			var got []string
			for _, k := range keys {
				got = append(got, k.kind+":"+itoa(k.slot)+":"+string(k.pass))
			}

			if !slices.Equal(got, c.want) {
				t.Errorf("keys %q, want %q", got, c.want)
			}
		})
	}
}

func itoa(i int) string { return joinInts([]int{i}) }

// newVolume is an image file big enough for a LUKS2 header and some data.
func newVolume(t *testing.T) *os.File {
	t.Helper()

	f, err := os.OpenFile(filepath.Join(t.TempDir(), "vol.img"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { f.Close() })

	if err := f.Truncate(20 << 20); err != nil {
		t.Fatal(err)
	}

	return f
}

func mustKeys(t *testing.T, ks ...configs.EncryptionKey) (*configs.EncryptionConfig, []volumeKey) {
	t.Helper()

	ec := &configs.EncryptionConfig{Provider: "luks2", Keys: ks}

	keys, err := volumeKeys(ec, "EPHEMERAL", testUUID)
	if err != nil {
		t.Fatal(err)
	}

	return ec, keys
}

func slotIDs(t *testing.T, f *os.File) []int {
	t.Helper()

	h, err := luks2.ReadHeader(f)
	if err != nil {
		t.Fatal(err)
	}

	var ids []int
	for _, ks := range h.Keyslots() {
		ids = append(ids, ks.ID)
	}

	return ids
}

// TestVolumeRotation is Talos 0.9's key rotation guide on a volume file: format
// with two keys, then configs that add a key, replace one in place and
// drop one; every step unlocks with what the config holds, and
// cryptsetup, the judge, agrees on the slots and the passphrases.
func TestVolumeRotation(t *testing.T) {
	f := newVolume(t)

	ec, keys := mustKeys(t, nodeIDKeyCfg(0), staticKey(1, "first"))

	vk, err := formatVolume(f, ec, keys, "EPHEMERAL", testKDF)
	if err != nil {
		t.Fatal(err)
	}

	clear(vk)

	if got := slotIDs(t, f); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("slots after format %v", got)
	}

	steps := []struct {
		name   string
		keys   []configs.EncryptionKey
		sync   string
		slots  []int
		opener string // the kind that opens first
	}{
		{"add a key", []configs.EncryptionKey{nodeIDKeyCfg(0), staticKey(1, "first"), staticKey(2, "second")}, "added key slot(s) 2", []int{0, 1, 2}, "nodeID"},
		{"nothing to do", []configs.EncryptionKey{nodeIDKeyCfg(0), staticKey(1, "first"), staticKey(2, "second")}, "", []int{0, 1, 2}, "nodeID"},
		{"remove the old one", []configs.EncryptionKey{nodeIDKeyCfg(0), staticKey(2, "second")}, "removed key slot(s) 1", []int{0, 2}, "nodeID"},
		{"replace in place", []configs.EncryptionKey{nodeIDKeyCfg(0), staticKey(2, "third")}, "replaced key slot(s) 2", []int{0, 2}, "nodeID"},
		{"static only: nodeID dropped", []configs.EncryptionKey{staticKey(2, "third")}, "removed key slot(s) 0", []int{2}, "static"},
		{"a key moved to another slot still opens", []configs.EncryptionKey{staticKey(5, "third")}, "added key slot(s) 5; removed key slot(s) 2", []int{5}, "static"},
	}

	for _, s := range steps {
		_, keys := mustKeys(t, s.keys...)

		vk, opened, err := unlockVolume(f, keys, "EPHEMERAL")
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}

		if opened.kind != s.opener {
			t.Errorf("%s: opened by %s", s.name, opened)
		}

		got := syncKeys(f, vk, opened, keys, testKDF)
		clear(vk)

		if got.String() != s.sync {
			t.Errorf("%s: sync %q, want %q", s.name, got, s.sync)
		}

		if ids := slotIDs(t, f); !slices.Equal(ids, s.slots) {
			t.Errorf("%s: slots %v, want %v", s.name, ids, s.slots)
		}

		for _, k := range keys {
			if _, err := luks2.TestKey(f, k.pass, k.slot); err != nil {
				t.Errorf("%s: key %s does not open its slot: %v", s.name, k, err)
			}
		}
	}

	if _, err := exec.LookPath("cryptsetup"); err != nil {
		t.Fatalf("cryptsetup is the judge (scripts/install-deps.sh installs it): %v", err)
	}

	dump, err := exec.Command("cryptsetup", "luksDump", f.Name()).CombinedOutput()
	if err != nil {
		t.Fatalf("cryptsetup luksDump: %v\n%s", err, dump)
	}

	if got := regexp.MustCompile(`(?m)^\s+(\d+): luks2`).FindAllStringSubmatch(string(dump), -1); len(got) != 1 || got[0][1] != "5" {
		t.Errorf("cryptsetup sees keyslots %v, want only 5:\n%s", got, dump)
	}

	cmd := exec.Command("cryptsetup", "open", "--test-passphrase", "--key-slot", "5", "--key-file=-", f.Name())
	cmd.Stdin = strings.NewReader("third")

	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("cryptsetup rejects the rotated key: %v\n%s", err, out)
	}
}

func TestUnlockVolumeWrongKeys(t *testing.T) {
	f := newVolume(t)

	ec, keys := mustKeys(t, staticKey(0, "right"))

	vk, err := formatVolume(f, ec, keys, "STATE", testKDF)
	if err != nil {
		t.Fatal(err)
	}

	clear(vk)

	_, wrong := mustKeys(t, staticKey(0, "wrong"), staticKey(1, "also-wrong"))

	_, _, err = unlockVolume(f, wrong, "STATE")
	if !errors.Is(err, luks2.ErrWrongKey) || !strings.Contains(err.Error(), "tried slot 0 (static), slot 1 (static)") {
		t.Fatalf("err %v", err)
	}

	if strings.Contains(err.Error(), "wrong") && strings.Contains(err.Error(), "also-wrong") {
		t.Errorf("the error carries a passphrase: %v", err)
	}
}

// TestStateEncryptionMeta: META's tag 0x09 is Talos's legacy JSON, field
// names as Go spells them and nulls for the kinds not set.
func TestStateEncryptionMeta(t *testing.T) {
	ec := &configs.EncryptionConfig{Provider: "luks2", Keys: []configs.EncryptionKey{nodeIDKeyCfg(0), staticKey(1, "pw")}}

	b, err := encodeStateEncryption(ec)
	if err != nil {
		t.Fatal(err)
	}

	const want = `{"EncryptionProvider":"luks2","EncryptionKeys":[` +
		`{"KeyStatic":null,"KeyNodeID":{},"KeyKMS":null,"KeySlot":0,"KeyTPM":null},` +
		`{"KeyStatic":{"KeyData":"pw"},"KeyNodeID":null,"KeyKMS":null,"KeySlot":1,"KeyTPM":null}],` +
		`"EncryptionCipher":"","EncryptionKeySize":0,"EncryptionBlockSize":0,"EncryptionPerfOptions":null}`
	if string(b) != want {
		t.Errorf("META JSON\n%s\nwant\n%s", b, want)
	}

	back, err := decodeStateEncryption(b)
	if err != nil {
		t.Fatal(err)
	}

	if len(back.Keys) != 2 || back.Keys[0].NodeID == nil || back.Keys[1].Static == nil || back.Keys[1].Static.Passphrase != "pw" || back.Provider != "luks2" {
		t.Errorf("round trip: %+v", back)
	}

	if _, err := decodeStateEncryption([]byte(`{"EncryptionKeys":`)); err == nil {
		t.Error("a truncated record decodes")
	}
}
