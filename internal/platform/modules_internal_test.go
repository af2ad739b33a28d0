package platform

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestImageModulesLoadOrder(t *testing.T) {
	dir := t.TempDir()

	// As initramfs.Archive.Modules writes it: no space after the colon,
	// dependencies listed with each module.
	dep := "kernel/drivers/net/net_failover.ko:kernel/net/core/failover.ko\n" +
		"kernel/net/core/failover.ko:\n" +
		"kernel/drivers/net/virtio_net.ko:kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko\n" +
		"kernel/drivers/net/wireguard/wireguard.ko.xz:\n" +
		"kernel/net/8021q/8021q.ko:\n" +
		"kernel/drivers/virtio/virtio_pci.ko:\n" +
		"kernel/drivers/block/virtio-blk.ko:\n" +
		"kernel/drivers/virtio/virtio_pci.ko:\n"

	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644); err != nil {
		t.Fatal(err)
	}

	avail, err := imageModules(dir)
	if err != nil {
		t.Fatal(err)
	}

	wantAvail := []string{"net_failover", "failover", "virtio_net", "wireguard", "8021q", "virtio_pci", "virtio_blk"}
	if !slices.Equal(avail, wantAvail) {
		t.Fatalf("imageModules = %v, want %v", avail, wantAvail)
	}

	// Boot drivers first, in BootModules' order; the rest as listed.
	want := []string{"virtio_pci", "virtio_blk", "virtio_net", "net_failover", "failover", "wireguard", "8021q"}
	if got := loadOrder(avail); !slices.Equal(got, want) {
		t.Fatalf("loadOrder = %v, want %v", got, want)
	}
}

// With a modules.boot, what it leaves out of modules.dep (the NFS and
// Ceph clients) is not loaded at boot: it waits for /sbin/modprobe.
func TestBootModulesFollowModulesBoot(t *testing.T) {
	dir := t.TempDir()

	dep := "kernel/net/8021q/8021q.ko:\nkernel/net/sunrpc/sunrpc.ko:\nkernel/fs/nfs/nfs.ko:kernel/net/sunrpc/sunrpc.ko\nkernel/drivers/block/virtio_blk.ko:\n"
	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644); err != nil {
		t.Fatal(err)
	}

	got, err := bootModules(dir)
	if err != nil || !slices.Equal(got, []string{"8021q", "sunrpc", "nfs", "virtio_blk"}) {
		t.Fatalf("without modules.boot: %v, %v; want all of modules.dep", got, err)
	}

	if err := os.WriteFile(filepath.Join(dir, "modules.boot"), []byte("virtio-blk\n8021q\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	got, err = bootModules(dir)
	if err != nil || !slices.Equal(got, []string{"virtio_blk", "8021q"}) {
		t.Fatalf("with modules.boot: %v, %v; want virtio_blk 8021q", got, err)
	}
}
