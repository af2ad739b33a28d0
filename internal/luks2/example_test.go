package luks2_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/talosbox/talosbox/internal/luks2"
)

// Example walks the Talos flow: format STATE with the node-ID key in slot
// 0, store a KMS key with its token in slot 1, then rotate slot 0 away.
// Real callers leave PBKDF at its defaults; the small costs keep the
// example fast.
func Example() {
	dir, _ := os.MkdirTemp("", "luks2-example")
	defer os.RemoveAll(dir)
	dev, _ := os.Create(filepath.Join(dir, "state.img"))
	defer dev.Close()
	dev.Truncate(32 << 20)

	kdf := luks2.PBKDF{Type: luks2.KDFArgon2id, Iterations: 4, Memory: 32 << 10, Parallel: 1}
	nodeKey := []byte("4c4c4544-0039-4d10-8048-b4c04f4a4e31" + "STATE")
	vk, err := luks2.Format(dev, nil, nodeKey, luks2.FormatOptions{PBKDF: kdf, DigestIterations: 1000, SectorSize: 4096})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer clear(vk)

	kmsKey := []byte("c2VjcmV0IGZyb20gS01T")
	slot, _ := luks2.AddKey(dev, nodeKey, kmsKey, 1, kdf)
	luks2.SetToken(dev, slot, []byte(`{"type":"sideroKMS","keyslots":[],"UserData":{"sealedData":"AAAA"}}`))

	luks2.RemoveKey(dev, 0)
	_, _, err = luks2.Unlock(dev, nodeKey)
	fmt.Println("old key rejected:", errors.Is(err, luks2.ErrWrongKey))
	_, used, _ := luks2.Unlock(dev, kmsKey)
	fmt.Println("kms key opens slot", used)
	h, _ := luks2.ReadHeader(dev)
	seg, _ := h.Segment()
	fmt.Println(seg.Cipher, seg.Offset, seg.SectorSize, len(h.Tokens()))
	// Output:
	// old key rejected: true
	// kms key opens slot 1
	// aes-xts-plain64 16777216 4096 1
}
