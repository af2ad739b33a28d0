package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// TestBlockController mirrors a fake sysfs into Disks, BlockDevices and
// the SystemDisk, and follows it when a STATE partition appears.
func TestBlockController(t *testing.T) {
	sys := fakeDisks(t, map[string]int64{"vda": 6, "sdb": 2})

	if err := os.WriteFile(filepath.Join(sys, "devices", "virtio", "block", "vda", "serial"), []byte("talos-vda\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	store := bus.NewStore(bus.StoreOptions{})
	rt := bus.NewRuntime(store, bus.RuntimeOptions{})
	rescan := make(chan struct{})

	// Device nodes: vda blank, vda5 (below) an ext4 STATE; sdb has none,
	// as a host disk seen from a container.
	devRoot := t.TempDir()
	if err := os.MkdirAll(filepath.Join(devRoot, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(devRoot, "dev", "vda"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := rt.Register(&BlockController{SysRoot: sys, DevRoot: devRoot, Interval: time.Hour, Rescan: rescan}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)

	go func() { done <- rt.Run(ctx) }()

	t.Cleanup(func() { cancel(); <-done })

	ids := func(typ string) map[string]bus.Resource {
		rs, err := store.List(ctx, bus.Kind{Namespace: runtime.NamespaceRuntime, Type: typ})
		if err != nil {
			t.Fatal(err)
		}

		out := map[string]bus.Resource{}
		for _, r := range rs {
			out[r.Metadata().ID] = r
		}

		return out
	}

	waitUntil := func(what string, ok func() bool) {
		t.Helper()

		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}

			time.Sleep(10 * time.Millisecond) // polling the store: the controller has no event to wait on
		}
	}

	waitUntil("two disks", func() bool { return len(ids(block.DiskType)) == 2 })

	vda := ids(block.DiskType)["vda"].(*bus.Typed[block.DiskSpec]).TypedSpec()
	if vda.DevPath != "/dev/vda" || vda.Size != 6<<30 || vda.PrettySize != "6.4 GB" || vda.Serial != "talos-vda" {
		t.Errorf("vda = %+v", vda)
	}

	if len(ids(block.SystemDiskType)) != 0 {
		t.Error("a system disk before any STATE partition")
	}

	// Partition 5 of vda, labelled STATE, as the kernel shows it.
	part := filepath.Join(sys, "devices", "virtio", "block", "vda", "vda5")
	if err := os.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}

	for f, c := range map[string]string{
		"uevent": "MAJOR=254\nMINOR=5\nDEVNAME=vda5\nDEVTYPE=partition\nPARTN=5\nPARTNAME=STATE\n",
		"size":   fmt.Sprint(204800), "ro": "0",
	} {
		if err := os.WriteFile(filepath.Join(part, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.Symlink(part, filepath.Join(sys, "class", "block", "vda5")); err != nil {
		t.Fatal(err)
	}

	img, err := os.Create(filepath.Join(devRoot, "dev", "vda5"))
	if err != nil {
		t.Fatal(err)
	}

	if err := img.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}

	if err := disk.FormatExt4(disk.Region{File: img, Size: 100 << 20}, "STATE"); err != nil {
		t.Fatal(err)
	}

	img.Close()

	rescan <- struct{}{}

	waitUntil("the system disk", func() bool { return len(ids(block.SystemDiskType)) == 1 })

	if sd := ids(block.SystemDiskType)[block.SystemDiskID].(*bus.Typed[block.SystemDiskSpec]).TypedSpec(); sd.DiskID != "vda" || sd.DevPath != "/dev/vda" {
		t.Errorf("system disk = %+v", sd)
	}

	bd := ids(block.BlockDeviceType)["vda5"].(*bus.Typed[block.BlockDeviceSpec]).TypedSpec()
	if bd.Type != "partition" || bd.PartitionName != "STATE" || bd.PartitionNumber != 5 || bd.Parent != "vda" || bd.Major != 254 || bd.Minor != 5 {
		t.Errorf("vda5 = %+v", bd)
	}

	if len(ids(block.DiskType)) != 2 {
		t.Errorf("disks after the partition: %v", ids(block.DiskType))
	}

	vols := ids(block.DiscoveredVolumeType)
	if _, ok := vols["sdb"]; ok || len(vols) != 2 {
		t.Errorf("discovered volumes %v: want vda and vda5 (sdb has no device node)", vols)
	}

	st := vols["vda5"].(*bus.Typed[block.DiscoveredVolumeSpec]).TypedSpec()
	if st.Name != "ext4" || st.Label != "STATE" || st.PartitionLabel != "STATE" || st.Type != "partition" || st.Parent != "vda" || st.UUID == "" {
		t.Errorf("vda5 discovered as %+v", st)
	}

	if v := vols["vda"].(*bus.Typed[block.DiscoveredVolumeSpec]).TypedSpec(); v.Name != "" || v.Type != "disk" {
		t.Errorf("blank vda discovered as %+v", v)
	}
}
