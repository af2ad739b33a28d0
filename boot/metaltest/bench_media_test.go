//go:build e2e

package metaltest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/talosbox/talosbox/boot/qemu"
)

// BenchmarkMetalMedia times QEMU start to maintenance mode (the console
// line) for one kernel and initramfs (the installer's), booted five ways
// in turns, in one run: QEMU's -kernel, the ISO on SeaBIOS and on UEFI
// (OVMF), the disk image on both. What the firmware and GRUB add is the
// difference. It also reports the ISO's and the compressed image's sizes.
//
//	kernel-s     -kernel and -initrd
//	iso-bios-s   the ISO from a CD-ROM on SeaBIOS (GRUB's El Torito image)
//	iso-uefi-s   the ISO from a CD-ROM on OVMF (GRUB's El Torito EFI image)
//	disk-bios-s  the disk image (zstd, expanded onto a 6 GiB disk) on
//	             SeaBIOS; EPHEMERAL grows on the way
//	disk-uefi-s  the same on OVMF
//
// scripts/bench-media.sh runs it.
func BenchmarkMetalMedia(b *testing.B) {
	bin, err := binary()
	if err != nil {
		b.Fatal(err)
	}

	inst, err := upgradeInstallers()
	if err != nil {
		b.Fatal(err)
	}

	iso := filepath.Join(b.TempDir(), "talosbox-amd64.iso")
	buildMedia(b, bin, "iso", inst.initramfs, iso)

	st, err := os.Stat(iso)
	if err != nil {
		b.Fatal(err)
	}

	img := filepath.Join(b.TempDir(), "metal-amd64.raw.zst")
	buildMedia(b, bin, "metal", inst.initramfs, img)

	imgSt, err := os.Stat(img)
	if err != nil {
		b.Fatal(err)
	}

	release, err := qemu.Exclusive()
	if err != nil {
		b.Fatal(err)
	}
	defer release()

	variants := []struct {
		name string
		opts nodeOptions
	}{
		{"kernel-s", nodeOptions{}},
		{"iso-bios-s", nodeOptions{cdrom: iso}},
		{"iso-uefi-s", nodeOptions{cdrom: iso, uefi: true}},
		{"disk-bios-s", nodeOptions{diskImage: img}},
		{"disk-uefi-s", nodeOptions{diskImage: img, uefi: true}},
	}

	times := map[string][]float64{}

	for i := 0; b.Loop(); i++ {
		for _, v := range variants {
			v.opts.image, v.opts.locked = inst.initramfs, true

			n := newNode(b, v.opts)
			n.append = mediaArgs()
			n.boot()
			n.wait(markMaintenance, bootTimeout)

			d := time.Since(n.started)
			times[v.name] = append(times[v.name], d.Seconds())
			n.vm.Kill()

			b.Logf("run %d: %s %.2fs", i+1, v.name, d.Seconds())
		}
	}

	for _, v := range variants {
		b.ReportMetric(median(times[v.name]), v.name)
	}

	b.ReportMetric(float64(st.Size())/(1<<20), "iso-MiB")
	b.ReportMetric(float64(imgSt.Size())/(1<<20), "image-zst-MiB")
}
