//go:build e2e

package guesttest

import (
	"context"
	"testing"
	"time"
)

// cryptModules are what the dm-crypt check loads: brd for a disk, the
// device-mapper and dm-crypt, and the crypto templates aes-xts-plain64
// is built from. The kernel asks modprobe for crypto-xts(aes) when
// dm-crypt allocates the cipher, and a node has no modprobe: xts (and
// ecb, which xts wraps) must be loaded beforehand.
var cryptModules = []string{"brd", "dm_mod", "dm_crypt", "xts", "ecb"}

// TestGuestDMCrypt: one guest without a network formats a 64 MiB brd
// ramdisk with internal/luks2, maps it with internal/dm through the
// device-mapper ioctls and checks the mapping from both sides (see
// guest_dmcrypt_test.go).
func TestGuestDMCrypt(t *testing.T) {
	e := newEnv(t)
	start := time.Now()

	vms := e.boot(node{
		spec: guestSpec{
			Name: "node0", Check: checkDMCrypt, Modules: cryptModules,
			ModuleParams: map[string][]string{"brd": {"rd_nr=1", "rd_size=65536", "max_part=0"}},
		},
		// No NIC: QEMU would otherwise add its default one.
		extra: []string{"-nic", "none"},
	})

	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()

	results(ctx, t, vms...)
	t.Logf("boot and check took %v", time.Since(start).Round(100*time.Millisecond))
}
