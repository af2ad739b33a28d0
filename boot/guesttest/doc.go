// Package guesttest runs networkd's controllers on a real kernel: each
// test boots two QEMU guests (Debian's cloud kernel, boot/qemu) on private
// L2 segments and checks that bonds (active-backup, 802.3ad with LACP),
// VLANs and WireGuard tunnels made by internal/network carry traffic
// between them; a single guest checks a dummy link. One more guest,
// without a network, checks internal/dm's dm-crypt mappings of a LUKS2
// volume made by internal/luks2 on a brd ramdisk.
//
// The guests' /init is this package's own test binary, built static
// (CGO_ENABLED=0 go test -c): its TestMain sees it is PID 1 and acts as a
// small test init instead of running tests (mount, load modules with
// internal/kmod, run networkd's controllers on a private bus with the
// guest's machine config, exchange traffic with the peer, print
// "TALOSBOX-GUEST-RESULT ok|fail: detail" on the console, power off on
// failure). The host side builds the images, boots the guests and asserts
// the result lines. Issue 9 boots the real machined as /init instead.
//
// The tests need qemu-system-x86_64 and the kernel unpacked by
// scripts/fetch-kernel.sh (see boot/qemu.KernelDir); they fail, not skip,
// without them.
package guesttest
