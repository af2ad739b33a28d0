package vm

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/bootmedia"
	"github.com/talosbox/talosbox/internal/platform/nocloud"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// A node's seed, read back as the node reads it, gives its name, and its
// address and gateway on the NIC with its MAC.
func TestWriteSeed(t *testing.T) {
	n := &Node{Name: "demo-controlplane-1", IP: netip.MustParseAddr("10.5.0.2"), MAC: "52:54:00:aa:bb:01", UUID: "0b5e6c1e-1111-2222-3333-444455556666"}
	seed := filepath.Join(t.TempDir(), "seed.iso")

	if err := writeSeed(seed, n, netip.MustParsePrefix("10.5.0.0/24"), netip.MustParseAddr("10.5.0.1")); err != nil {
		t.Fatal(err)
	}

	data, err := nocloud.ReadISO(seed)
	if err != nil {
		t.Fatal(err)
	}

	md, err := nocloud.ParseMetaData(data.MetaData)
	if err != nil || md.Hostname != n.Name || md.InstanceID != n.UUID {
		t.Errorf("meta-data: %+v, %v", md, err)
	}

	spec, err := nocloud.ParseNetworkConfig(data.NetworkConfig, md.Hostname, func(mac string) (string, bool) { return "eth0", mac == n.MAC })
	if err != nil {
		t.Fatal(err)
	}

	if len(spec.Addresses) != 1 || spec.Addresses[0].Address != netip.MustParsePrefix("10.5.0.2/24") || spec.Addresses[0].LinkName != "eth0" {
		t.Errorf("addresses: %+v", spec.Addresses)
	}

	if len(spec.Routes) != 1 || spec.Routes[0].Gateway != netip.MustParseAddr("10.5.0.1") {
		t.Errorf("routes: %+v", spec.Routes)
	}

	if len(spec.Hostnames) != 1 || spec.Hostnames[0] != (networkres.HostnameSpecSpec{Hostname: n.Name, Layer: networkres.LayerPlatform}) {
		t.Errorf("hostnames: %+v", spec.Hostnames)
	}
}

// Only an ISO whose nodes read their seed is taken.
func TestCheckISO(t *testing.T) {
	dir := t.TempDir()
	o := bootmedia.Options{Kernel: filepath.Join(dir, "vmlinuz"), Initramfs: filepath.Join(dir, "initrd")}

	for _, p := range []string{o.Kernel, o.Initramfs} {
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	metal, nc := filepath.Join(dir, "metal.iso"), filepath.Join(dir, "nocloud.iso")
	if err := bootmedia.ISO(context.Background(), o, metal); err != nil {
		t.Fatal(err)
	}

	o.Cmdline = append([]string{"talos.platform=nocloud"}, bootmedia.DefaultCmdline[1:]...)
	if err := bootmedia.ISO(context.Background(), o, nc); err != nil {
		t.Fatal(err)
	}

	if err := checkISO(nc); err != nil {
		t.Errorf("a nocloud ISO: %v", err)
	}

	if err := checkISO(metal); err == nil || !strings.Contains(err.Error(), "talosbox imager iso --platform nocloud") {
		t.Errorf("a metal ISO: %v", err)
	}

	if err := checkISO(o.Kernel); err == nil || !strings.Contains(err.Error(), "not a talosbox ISO") {
		t.Errorf("not an ISO: %v", err)
	}
}

// A node's disk from a disk image: the image's bytes, grown to the
// node's size, sparse; only an image whose nodes read their seed is
// taken, and one larger than the disk is refused.
func TestMakeDiskFromImage(t *testing.T) {
	dir := t.TempDir()
	o := bootmedia.Options{Kernel: filepath.Join(dir, "vmlinuz"), Initramfs: filepath.Join(dir, "initramfs"), Version: "v0.0.1-test"}

	for _, f := range []string{o.Kernel, o.Initramfs} {
		if err := os.WriteFile(f, []byte("not empty"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Raw images: bootmedia's tests take the zstd path (slow under -race).
	metal, nc := filepath.Join(dir, "metal.raw"), filepath.Join(dir, "nocloud.raw")
	if err := bootmedia.DiskImage(context.Background(), o, metal); err != nil {
		t.Fatal(err)
	}

	o.Cmdline = []string{"talos.platform=nocloud", "console=ttyS0"}
	if err := bootmedia.DiskImage(context.Background(), o, nc); err != nil {
		t.Fatal(err)
	}

	const size = 4400 << 20

	d := filepath.Join(dir, "disk.img")
	if err := makeDisk(d, nc, size); err != nil {
		t.Fatal(err)
	}

	var st unix.Stat_t
	if err := unix.Stat(d, &st); err != nil || st.Size != size || st.Blocks*512 > 64<<20 {
		t.Errorf("disk: %v, %d bytes, %d allocated: want %d, sparse", err, st.Size, st.Blocks*512, size)
	}

	if !diskBoots(d) {
		t.Errorf("the disk made from the image does not boot by itself")
	}

	for _, tc := range []struct {
		image string
		size  int64
		want  string
	}{
		{metal, size, "boots another platform than nocloud"},
		{o.Kernel, size, "not a disk image"},
		{nc, 1 << 30, "larger than the node's disk"},
	} {
		p := filepath.Join(t.TempDir(), "disk.img")
		if err := makeDisk(p, tc.image, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", filepath.Base(tc.image), err, tc.want)
		}
	}
}
