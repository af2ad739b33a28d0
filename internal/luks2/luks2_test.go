package luks2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestFormatUnlock formats with each KDF, key size and sector size and
// opens the result: the key comes back, a wrong passphrase is ErrWrongKey.
func TestFormatUnlock(t *testing.T) {
	cases := []struct {
		name    string
		kdf     PBKDF
		keySize int
		sector  int
	}{
		{"argon2id-512-4096", PBKDF{Type: KDFArgon2id, Iterations: 4, Memory: 32 << 10, Parallel: 4}, 512, 4096},
		{"argon2i-256-512", PBKDF{Type: KDFArgon2i, Iterations: 4, Memory: 32 << 10, Parallel: 2}, 256, 512},
		{"pbkdf2-sha256-512-512", PBKDF{Type: KDFPBKDF2, Hash: "sha256", Iterations: 1000}, 512, 512},
		{"pbkdf2-sha512-256-4096", PBKDF{Type: KDFPBKDF2, Hash: "sha512", Iterations: 1000}, 256, 4096},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, vk := formatted(t, "secret", FormatOptions{KeySize: tc.keySize, SectorSize: tc.sector, PBKDF: tc.kdf, Label: "STATE"})
			if len(vk) != tc.keySize/8 {
				t.Fatalf("volume key is %d bytes", len(vk))
			}
			got, slot, err := Unlock(f, []byte("secret"))
			if err != nil || slot != 0 || !bytes.Equal(got, vk) {
				t.Fatalf("Unlock = slot %d, same key %v, %v", slot, bytes.Equal(got, vk), err)
			}
			if _, _, err := Unlock(f, []byte("Secret")); !errors.Is(err, ErrWrongKey) {
				t.Fatalf("wrong passphrase: %v, want ErrWrongKey", err)
			}
			h := mustRead(t, f)
			seg, err := h.Segment()
			if err != nil || seg.SectorSize != tc.sector || seg.Offset != DefaultDataOffset || !seg.Dynamic || seg.Cipher != CipherAESXTSPlain64 {
				t.Fatalf("segment %+v, %v", seg, err)
			}
			ks := h.Keyslots()
			if len(ks) != 1 || ks[0].PBKDF.Type != tc.kdf.Type || ks[0].PBKDF.Iterations != tc.kdf.Iterations || ks[0].KeySize != tc.keySize/8 {
				t.Fatalf("keyslots %+v", ks)
			}
			if h.Label != "STATE" || h.NeedsRepair() {
				t.Fatalf("label %q, repair %v", h.Label, h.NeedsRepair())
			}
		})
	}
}

// TestFormatGivenKey stores a caller's volume key and checks the size rule.
func TestFormatGivenKey(t *testing.T) {
	f := newImage(t, 20<<20)
	key := bytes.Repeat([]byte{7}, 32)
	if _, err := Format(f, key, []byte("p"), FormatOptions{KeySize: 512, PBKDF: fastPBKDF2, DigestIterations: 1000}); err == nil {
		t.Fatal("a 256-bit key with KeySize 512 was accepted")
	}
	if _, err := Format(f, key, []byte("p"), FormatOptions{KeySize: 256, PBKDF: fastPBKDF2, DigestIterations: 1000}); err != nil {
		t.Fatal(err)
	}
	got, _, err := Unlock(f, []byte("p"))
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("Unlock: %v", err)
	}
	small := newImage(t, 16<<20)
	if _, err := Format(small, nil, []byte("p"), FormatOptions{PBKDF: fastPBKDF2, DigestIterations: 1000}); err == nil {
		t.Fatal("a device with no room after the header was formatted")
	}
}

// TestAddRemoveRotate walks the Talos rotation: add the new key, then
// remove the old one, with the refusals along the way.
func TestAddRemoveRotate(t *testing.T) {
	f, vk := formatted(t, "old", FormatOptions{})
	if _, err := AddKey(f, []byte("nope"), []byte("new"), 3, fastPBKDF2); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("AddKey with a wrong passphrase: %v", err)
	}
	if _, err := AddKey(f, []byte("old"), []byte("new"), 0, fastPBKDF2); !errors.Is(err, ErrSlotInUse) {
		t.Fatalf("AddKey to slot 0: %v", err)
	}
	slot, err := AddKey(f, []byte("old"), []byte("new"), 3, fastArgon)
	if err != nil || slot != 3 {
		t.Fatalf("AddKey = %d, %v", slot, err)
	}
	if got, _ := AddKey(f, []byte("new"), []byte("third"), AnySlot, fastPBKDF2); got != 1 {
		t.Fatalf("AnySlot chose %d, want 1", got)
	}
	if s, err := TestKey(f, []byte("new"), AnySlot); err != nil || s != 3 {
		t.Fatalf("TestKey(new) = %d, %v", s, err)
	}
	if _, err := TestKey(f, []byte("new"), 0); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("TestKey(new, slot 0): %v", err)
	}
	if _, err := TestKey(f, []byte("new"), 5); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("TestKey(slot 5): %v", err)
	}
	if _, err := AddKeyByVolumeKey(f, bytes.Repeat([]byte{1}, len(vk)), []byte("x"), AnySlot, fastPBKDF2); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("AddKeyByVolumeKey with a wrong key: %v", err)
	}

	h := mustRead(t, f)
	area0 := h.Keyslots()[0]
	if err := RemoveKey(f, 0); err != nil {
		t.Fatal(err)
	}
	if !isZero(readAt(t, f, int64(area0.AreaOffset), int(area0.AreaSize))) {
		t.Fatal("removed keyslot's area was not wiped")
	}
	if _, _, err := Unlock(f, []byte("old")); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("old passphrase after removal: %v", err)
	}
	got, s, err := Unlock(f, []byte("new"))
	if err != nil || s != 3 || !bytes.Equal(got, vk) {
		t.Fatalf("new passphrase after rotation: slot %d, %v", s, err)
	}
	if err := RemoveKey(f, 0); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("removing slot 0 twice: %v", err)
	}
	if err := RemoveKey(f, 1); err != nil {
		t.Fatal(err)
	}
	if err := RemoveKey(f, 3); !errors.Is(err, ErrLastSlot) {
		t.Fatalf("removing the last slot: %v", err)
	}
	// The freed area is reused, lowest first, as cryptsetup places slots.
	if _, err := AddKey(f, []byte("new"), []byte("again"), 7, fastPBKDF2); err != nil {
		t.Fatal(err)
	}
	for _, k := range mustRead(t, f).Keyslots() {
		if k.ID == 7 && k.AreaOffset != area0.AreaOffset {
			t.Fatalf("slot 7 at %d, want the freed %d", k.AreaOffset, area0.AreaOffset)
		}
	}
}

// TestSlotsExhausted fills all 32 keyslots (a 256-bit slot takes 128 KiB,
// so all fit the default area) and then a keyslots area too small for a
// second slot.
func TestSlotsExhausted(t *testing.T) {
	f, vk := formatted(t, "p", FormatOptions{KeySize: 256})
	for i := 1; i < MaxSlots; i++ {
		if _, err := AddKeyByVolumeKey(f, vk, []byte(fmt.Sprint(i)), AnySlot, fastPBKDF2); err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
	}
	if _, err := AddKeyByVolumeKey(f, vk, []byte("x"), AnySlot, fastPBKDF2); !errors.Is(err, ErrNoFreeSlot) {
		t.Fatalf("33rd slot: %v", err)
	}
	if s, err := TestKey(f, []byte("31"), AnySlot); err != nil || s != 31 {
		t.Fatalf("slot 31: %d %v", s, err)
	}
	small, svk := formatted(t, "p", FormatOptions{KeyslotsSize: 256 << 10})
	if _, err := AddKeyByVolumeKey(small, svk, []byte("x"), AnySlot, fastPBKDF2); !errors.Is(err, ErrNoFreeSlot) {
		t.Fatalf("full keyslots area: %v", err)
	}
}

// TestPriority: a preferred slot is tried first and an ignored one only
// when asked for by number, as cryptsetup does.
func TestPriority(t *testing.T) {
	f, vk := formatted(t, "same", FormatOptions{})
	if _, err := AddKeyByVolumeKey(f, vk, []byte("same"), 4, fastPBKDF2); err != nil {
		t.Fatal(err)
	}
	setPriority := func(id, p int) {
		h := mustRead(t, f)
		h.md.Keyslots[id].Priority = &p
		if err := h.write(f); err != nil {
			t.Fatal(err)
		}
	}
	setPriority(4, priorityPrefer)
	if _, s, _ := Unlock(f, []byte("same")); s != 4 {
		t.Fatalf("preferred slot not first: opened %d", s)
	}
	setPriority(0, priorityIgnore)
	setPriority(4, priorityIgnore)
	if _, _, err := Unlock(f, []byte("same")); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("ignored slots were tried: %v", err)
	}
	if _, s, err := UnlockSlot(f, []byte("same"), 4); err != nil || s != 4 {
		t.Fatalf("explicit ignored slot: %d %v", s, err)
	}
}

func TestTokens(t *testing.T) {
	f, _ := formatted(t, "p", FormatOptions{})
	kms := `{"type":"sideroKMS","keyslots":[],"UserData":{"sealedData":"c2VhbGVk"}}`
	if err := SetToken(f, 0, []byte(kms)); err != nil {
		t.Fatal(err)
	}
	bound := `{"type":"talos-tpm2","keyslots":["0"],"UserData":{"keyslots":[0],"pcrs":[11],"alg":"sha256"}}`
	if err := SetToken(f, 5, []byte(bound)); err != nil {
		t.Fatal(err)
	}
	toks, err := Tokens(f)
	if err != nil || len(toks) != 2 || !jsonEqual(t, toks[0], []byte(kms)) || !jsonEqual(t, toks[5], []byte(bound)) {
		t.Fatalf("Tokens = %v, %v", toks, err)
	}
	for _, bad := range []string{`[]`, `{"keyslots":[]}`, `{"type":"x"}`, `{"type":"x","keyslots":["9"]}`, `{"type":"x","keyslots":[0]}`, `{`} {
		if err := SetToken(f, 1, []byte(bad)); err == nil {
			t.Errorf("token %s was accepted", bad)
		}
	}
	if err := SetToken(f, 9, []byte(`{"type":"a<&>b","keyslots":[]}`)); err != nil {
		t.Fatal(err)
	}
	if js, _ := mustRead(t, f).JSON(); !strings.Contains(string(js), `"a<&>b"`) {
		t.Fatalf("token text was escaped: %s", js)
	}
	if err := RemoveToken(f, 9); err != nil {
		t.Fatal(err)
	}
	if err := SetToken(f, 32, []byte(kms)); err == nil {
		t.Error("token 32 was accepted")
	}
	// Removing keyslot 0 unbinds it from token 5 but keeps the token.
	if _, err := AddKey(f, []byte("p"), []byte("q"), 1, fastPBKDF2); err != nil {
		t.Fatal(err)
	}
	if err := RemoveKey(f, 0); err != nil {
		t.Fatal(err)
	}
	toks, _ = Tokens(f)
	want := `{"type":"talos-tpm2","keyslots":[],"UserData":{"keyslots":[0],"pcrs":[11],"alg":"sha256"}}`
	if !jsonEqual(t, toks[5], []byte(want)) {
		t.Fatalf("token 5 after RemoveKey(0) = %s", toks[5])
	}
	if err := RemoveToken(f, 5); err != nil {
		t.Fatal(err)
	}
	if err := RemoveToken(f, 5); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("second RemoveToken: %v", err)
	}
	if toks, _ = Tokens(f); len(toks) != 1 {
		t.Fatalf("tokens after removal: %v", toks)
	}
}

// TestKeepsUnknownMembers: members we do not model survive a rewrite, and
// mandatory requirements stop every write.
func TestKeepsUnknownMembers(t *testing.T) {
	f, _ := formatted(t, "p", FormatOptions{})
	h := mustRead(t, f)
	h.md.Config.Extra = extras{"flags": json.RawMessage(`["allow-discards"]`)}
	h.md.Segments[0].Extra = extras{"flags": json.RawMessage(`["backup-x"]`)}
	h.md.Keyslots[0].Extra = extras{"future": json.RawMessage(`{"a":1}`)}
	if err := h.write(f); err != nil {
		t.Fatal(err)
	}
	if _, err := AddKey(f, []byte("p"), []byte("q"), 2, fastPBKDF2); err != nil {
		t.Fatal(err)
	}
	js, _ := mustRead(t, f).JSON()
	for _, want := range []string{`"flags":["allow-discards"]`, `"flags":["backup-x"]`, `"future":{"a":1}`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("%s lost after AddKey: %s", want, js)
		}
	}
	h = mustRead(t, f)
	h.md.Config.Extra["requirements"] = json.RawMessage(`{"mandatory":["online-reencrypt-v2"]}`)
	if err := h.write(f); err != nil {
		t.Fatal(err)
	}
	if _, err := AddKey(f, []byte("p"), []byte("r"), 3, fastPBKDF2); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("AddKey despite a mandatory requirement: %v", err)
	}
	if err := RemoveKey(f, 2); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("RemoveKey despite a mandatory requirement: %v", err)
	}
	if _, _, err := Unlock(f, []byte("q")); err != nil {
		t.Fatalf("Unlock is still allowed: %v", err)
	}
}

// TestErrorsCarryNoSecrets: no error text contains the passphrase or the
// volume key.
func TestErrorsCarryNoSecrets(t *testing.T) {
	pass := "correct horse battery staple"
	f, vk := formatted(t, pass, FormatOptions{})
	var errs []error
	_, _, err := Unlock(f, []byte(pass+"!"))
	errs = append(errs, err)
	_, err = AddKey(f, []byte(pass), []byte(pass), 0, fastPBKDF2)
	errs = append(errs, err)
	_, err = Format(newImage(t, 20<<20), vk, []byte(pass), FormatOptions{KeySize: 256})
	errs = append(errs, err)
	for _, err := range errs {
		if err == nil {
			t.Fatal("expected an error")
		}
		msg := err.Error()
		if strings.Contains(msg, "horse") || strings.Contains(msg, fmt.Sprintf("%x", vk[:8])) || strings.Contains(msg, string(vk[:8])) {
			t.Fatalf("secret in error: %q", msg)
		}
	}
}

func TestFormatLayout(t *testing.T) {
	// The same table TestCryptsetupLayout checks against cryptsetup.
	for _, tc := range layoutCases {
		o, err := tc.opts.resolve()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if o.DataOffset != tc.dataOffset || o.KeyslotsSize != tc.keyslotsSize {
			t.Errorf("%s: data offset %d keyslots %d, want %d %d", tc.name, o.DataOffset, o.KeyslotsSize, tc.dataOffset, tc.keyslotsSize)
		}
	}
	for _, bad := range []FormatOptions{
		{KeySize: 128}, {SectorSize: 520}, {MetadataSize: 20 << 10}, {KeyslotsSize: 1000},
		{DataOffset: 16 << 10}, {UUID: "not-a-uuid"}, {Label: strings.Repeat("x", 48)}, {Cipher: "twofish-cbc-plain"}, {Slot: 32},
	} {
		if _, err := bad.resolve(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

var layoutCases = []struct {
	name                     string
	args                     []string // the cryptsetup luksFormat equivalent
	opts                     FormatOptions
	dataOffset, keyslotsSize uint64
}{
	{"defaults", nil, FormatOptions{}, 16 << 20, 16<<20 - 32<<10},
	{"metadata-64k", []string{"--luks2-metadata-size", "64k"}, FormatOptions{MetadataSize: 64 << 10}, 16 << 20, 16<<20 - 128<<10},
	{"keyslots-1m", []string{"--luks2-keyslots-size", "1M"}, FormatOptions{KeyslotsSize: 1 << 20}, 2 << 20, 1 << 20},
	{"offset-20m", []string{"--offset", "40960"}, FormatOptions{DataOffset: 20 << 20}, 20 << 20, 20<<20 - 32<<10},
	{"metadata-4m", []string{"--luks2-metadata-size", "4M"}, FormatOptions{MetadataSize: 4 << 20}, 16 << 20, 8 << 20},
}
