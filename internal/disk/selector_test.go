package disk_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
)

// selectorSysfs is a machine with a virtio disk, a SATA SSD, a SATA HDD,
// an NVMe drive and an SD card, each with the attributes its driver shows.
func selectorSysfs(t *testing.T) []disk.BlockDevice {
	t.Helper()

	sys := fakeSysfs(t,
		fakeDev{name: "vda", sectors: 10 * sectorsPerGiB, bus: "pci0000:00/0000:00:05.0/virtio2",
			attrs: map[string]string{"serial": "talos-vda\n", "device/modalias": "virtio:d00000002v00001AF4\n", "queue/rotational": "1\n"}},
		fakeDev{name: "sda", sectors: 500 * 1000 * 1000 * 1000 / 512, bus: "pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0",
			attrs: map[string]string{"device/model": "Samsung SSD 870\n", "device/serial": "S6PNNS0T\n", "wwid": "naa.5002538f4132b6d0\n", "queue/rotational": "0\n"}},
		fakeDev{name: "sdb", sectors: 4000 * 1000 * 1000 * 1000 / 512, bus: "pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0",
			attrs: map[string]string{"device/model": "WDC WD40EFRX\n", "device/serial": "WD-WCC7K\n", "queue/rotational": "1\n"}},
		fakeDev{name: "nvme0n1", sectors: 1000 * 1000 * 1000 * 1000 / 512, bus: "pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0",
			attrs: map[string]string{"device/model": "Samsung SSD 980 PRO 1TB\n", "device/serial": "S5GXNF0R\n", "wwid": "eui.002538b111b1e1c4\n", "uuid": "0025388b-11b1-e1c4\n", "queue/rotational": "0\n"}},
		fakeDev{name: "mmcblk0", sectors: 32 * sectorsPerGiB, bus: "platform/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa",
			attrs: map[string]string{"device/name": "SC32G\n", "queue/rotational": "0\n"}},
	)

	// The subsystem link, as the kernel has it for each bus.
	for name, sub := range map[string]string{"vda": "virtio", "sda": "scsi", "nvme0n1": "nvme"} {
		subsys := filepath.Join(sys, "bus", sub)
		if err := os.MkdirAll(subsys, 0o755); err != nil {
			t.Fatal(err)
		}

		dev, err := filepath.EvalSymlinks(filepath.Join(sys, "class", "block", name))
		if err != nil {
			t.Fatal(err)
		}

		if err := os.Symlink(subsys, filepath.Join(dev, "device", "subsystem")); err != nil {
			t.Fatal(err)
		}
	}

	devs, err := disk.Scan(sys)
	if err != nil {
		t.Fatal(err)
	}

	return devs
}

func TestScanReadsIdentity(t *testing.T) {
	devs := selectorSysfs(t)

	byName := map[string]disk.BlockDevice{}
	for _, d := range devs {
		byName[d.Name] = d
	}

	nvme := byName["nvme0n1"]
	if nvme.Model != "Samsung SSD 980 PRO 1TB" || nvme.Serial != "S5GXNF0R" || nvme.WWID != "eui.002538b111b1e1c4" || nvme.UUID != "0025388b-11b1-e1c4" ||
		nvme.BusPath != "/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0" || nvme.Transport != "nvme" || nvme.Rotational {
		t.Errorf("nvme0n1 = %+v", nvme)
	}

	if vda := byName["vda"]; vda.Serial != "talos-vda" || vda.Modalias != "virtio:d00000002v00001AF4" || vda.Transport != "virtio" || !vda.Rotational {
		t.Errorf("vda = %+v", vda)
	}

	for name, want := range map[string]string{"vda": "hdd", "sda": "ssd", "sdb": "hdd", "nvme0n1": "nvme", "mmcblk0": "sd"} {
		if got := byName[name].Type(); got != want {
			t.Errorf("%s type %s, want %s", name, got, want)
		}
	}
}

func TestSelectDisk(t *testing.T) {
	devs := selectorSysfs(t)

	for _, tc := range []struct {
		name string
		sel  disk.Selector
		want string // a device path, or an error's text
	}{
		{"model glob", disk.Selector{Model: "Samsung SSD 9*"}, "/dev/nvme0n1"},
		{"model exact", disk.Selector{Model: "WDC WD40EFRX"}, "/dev/sdb"},
		{"serial", disk.Selector{Serial: "S6PNNS0T"}, "/dev/sda"},
		{"wwid glob", disk.Selector{WWID: "naa.*"}, "/dev/sda"},
		{"uuid", disk.Selector{UUID: "0025388b-11b1-e1c4"}, "/dev/nvme0n1"},
		{"modalias", disk.Selector{Modalias: "virtio:*"}, "/dev/vda"},
		{"name (mmc)", disk.Selector{Name: "SC32G"}, "/dev/mmcblk0"},
		{"type nvme", disk.Selector{Type: "nvme"}, "/dev/nvme0n1"},
		{"type ssd", disk.Selector{Type: "ssd"}, "/dev/sda"},
		{"type hdd", disk.Selector{Type: "hdd"}, "/dev/sdb"},
		{"type sd", disk.Selector{Type: "sd"}, "/dev/mmcblk0"},
		{"bus path glob", disk.Selector{BusPath: "/pci0000:00/0000:00:17.0/ata2/*"}, "/dev/sdb"},
		{"size exact", disk.Selector{Size: "500GB"}, "/dev/sda"},
		{"size greater", disk.Selector{Size: "> 1TB"}, "/dev/sdb"},
		{"size at least", disk.Selector{Size: ">= 1TB"}, "/dev/nvme0n1"},
		{"size below", disk.Selector{Size: "< 16GiB"}, "/dev/vda"},
		{"size at most, type", disk.Selector{Size: "<= 600GB", Type: "ssd"}, "/dev/sda"},
		{"all must match", disk.Selector{Model: "Samsung*", Size: "> 2TB"}, "matches no disk here"},
		{"no match lists the disks", disk.Selector{Serial: "nope"}, `serial "S6PNNS0T"`},
		{"bad size", disk.Selector{Size: "> lots"}, `size "lots"`},
		{"bad glob", disk.Selector{Model: "[unclosed"}, `model "[unclosed"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := disk.SelectDisk(devs, tc.sel)
			if strings.HasPrefix(tc.want, "/dev/") {
				if err != nil || d.Path != tc.want {
					t.Fatalf("SelectDisk(%s) = %s, %v; want %s", tc.sel, d.Path, err, tc.want)
				}

				return
			}

			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SelectDisk(%s) = %s, %v; want an error containing %q", tc.sel, d.Path, err, tc.want)
			}
		})
	}
}
