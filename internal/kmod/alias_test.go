package kmod

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestLookup(t *testing.T) {
	dir := t.TempDir()

	for name, data := range map[string]string{
		"modules.dep": "kernel/fs/nfs/nfs.ko:kernel/net/sunrpc/sunrpc.ko\nkernel/fs/nfs/nfsv4.ko:kernel/fs/nfs/nfs.ko kernel/net/sunrpc/sunrpc.ko\n" +
			"kernel/net/sunrpc/sunrpc.ko:\nkernel/fs/ceph/ceph.ko:\nkernel/drivers/block/rbd.ko:\nkernel/drivers/char/hw_random/virtio-rng.ko:\n",
		"modules.builtin": "kernel/net/packet/af_packet.ko\n",
		// As moduleIndexes writes it from the modules' alias= fields.
		"modules.alias": "alias nfs4 nfs\nalias fs-nfs4 nfs\nalias fs-nfs nfs\nalias fs-ceph ceph\n" +
			"alias virtio:d00000004v* virtio_rng\nalias net-pf-17 af_packet\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		name string
		want []string
	}{
		{"nfsv4", []string{"nfsv4"}},           // what nfs asks for by name
		{"fs-nfs4", []string{"nfs"}},           // what mount -t nfs4 asks for
		{"fs_nfs4", []string{"nfs"}},           // "-" and "_" are one
		{"virtio-rng", []string{"virtio_rng"}}, // a file name with a dash
		{"virtio:d00000004v00001AF4", []string{"virtio_rng"}},
		{"af_packet", []string{"af_packet"}}, // built in: nothing to load
		{"rbd", []string{"rbd"}},
		{"fs-ceph", []string{"ceph"}},
	} {
		got, err := Lookup(dir, tt.name)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Lookup(%q) = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}

	for _, name := range []string{"fs-btrfs", "nfs5", ""} {
		if got, err := Lookup(dir, name); !errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup(%q) = %v, %v; want ErrNotFound", name, got, err)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "modules.alias"), []byte("alias fs-nfs4\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	if _, err := Lookup(dir, "fs-nfs4"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("a malformed modules.alias: %v, want a parse error", err)
	}
}
