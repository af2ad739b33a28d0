package disk_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
)

// fakeDev is one block device of a fake sysfs.
type fakeDev struct {
	name, disk, partName string
	partN                int
	sectors              int64
	ro, removable        bool
	// bus is the device's path under devices/ (default pci0000:00);
	// attrs are extra files, relative to the block directory.
	bus   string
	attrs map[string]string
}

// fakeSysfs lays devs out as the kernel does: devices/<bus>/block/<disk>
// with partitions inside their disk's directory, and class/block/<name>
// symlinks to them.
func fakeSysfs(t *testing.T, devs ...fakeDev) string {
	t.Helper()

	root := t.TempDir()
	class := filepath.Join(root, "class", "block")

	if err := os.MkdirAll(class, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, d := range devs {
		bus := d.bus
		if bus == "" {
			bus = "pci0000:00"
		}

		dir := filepath.Join(root, "devices", bus, "block", d.name)
		uevent := fmt.Sprintf("MAJOR=254\nMINOR=0\nDEVNAME=%s\nDEVTYPE=disk\n", d.name)

		if d.disk != "" {
			dir = filepath.Join(root, "devices", bus, "block", d.disk, d.name)
			uevent = fmt.Sprintf("MAJOR=254\nMINOR=%d\nDEVNAME=%s\nDEVTYPE=partition\nPARTN=%d\nPARTNAME=%s\n", d.partN, d.name, d.partN, d.partName)
		}

		files := map[string]string{
			"uevent":    uevent,
			"size":      fmt.Sprintf("%d\n", d.sectors),
			"ro":        map[bool]string{true: "1\n", false: "0\n"}[d.ro],
			"removable": map[bool]string{true: "1\n", false: "0\n"}[d.removable],
		}

		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}

		for name, content := range d.attrs {
			files[name] = content
		}

		for name, content := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}

			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}

		rel, err := filepath.Rel(class, dir)
		if err != nil {
			t.Fatal(err)
		}

		if err := os.Symlink(rel, filepath.Join(class, d.name)); err != nil {
			t.Fatal(err)
		}
	}

	return root
}

const sectorsPerGiB = 1 << 21

func TestScanAndChooseDisk(t *testing.T) {
	sys := fakeSysfs(t,
		fakeDev{name: "loop0", sectors: 4 * sectorsPerGiB},
		fakeDev{name: "sr0", sectors: 1000, removable: true},
		fakeDev{name: "sda", sectors: 8 * sectorsPerGiB},
		fakeDev{name: "sdb", sectors: 16 * sectorsPerGiB, removable: true},
		fakeDev{name: "vda", sectors: 6 * sectorsPerGiB},
		fakeDev{name: "vda5", disk: "vda", partN: 5, partName: "STATE", sectors: 204800},
		fakeDev{name: "vda6", disk: "vda", partN: 6, partName: "EPHEMERAL", sectors: 3 * sectorsPerGiB},
		fakeDev{name: "vdb", sectors: 2 * sectorsPerGiB, ro: true},
		fakeDev{name: "vdc", sectors: 0},
		fakeDev{name: "nvme0n1", sectors: 10 * sectorsPerGiB},
		fakeDev{name: "nvme0n1p1", disk: "nvme0n1", partN: 1, partName: "STATE", sectors: 204800},
	)

	devs, err := disk.Scan(sys)
	if err != nil {
		t.Fatal(err)
	}

	var disks []string
	for _, d := range disk.Disks(devs) {
		disks = append(disks, d.Path)
	}

	if got := strings.Join(disks, " "); got != "/dev/nvme0n1 /dev/sda /dev/vda" {
		t.Errorf("Disks = %s, want the writable, fixed, real disks", got)
	}

	state, ok := disk.FindPartition(devs, "vda", "STATE")
	if !ok || state.Path != "/dev/vda5" || state.Disk != "vda" || state.PartN != 5 || state.Size != 204800*512 {
		t.Errorf("STATE on vda = %+v, %v", state, ok)
	}

	if first, ok := disk.FindPartition(devs, "", "STATE"); !ok || first.Path != "/dev/nvme0n1p1" {
		t.Errorf("first STATE = %+v, %v", first, ok)
	}

	if _, ok := disk.FindPartition(devs, "vda", "META"); ok {
		t.Error("found a META partition that does not exist")
	}

	tests := []struct {
		want, got, err string
	}{
		{want: "", got: "/dev/vda"},
		{want: "/dev/sda", got: "/dev/sda"},
		{want: "/dev//nvme0n1", got: "/dev/nvme0n1"},
		{want: "/dev/sdb", err: "install disk /dev/sdb: no such disk here (disks: /dev/nvme0n1 (10.0 GiB), /dev/sda (8.0 GiB), /dev/vda (6.0 GiB))"},
		{want: "/dev/vda5", err: "install disk /dev/vda5: no such disk here"},
	}

	for _, tt := range tests {
		t.Run("want "+tt.want, func(t *testing.T) {
			d, err := disk.ChooseDisk(devs, tt.want)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}

				return
			}

			if err != nil || d.Path != tt.got {
				t.Fatalf("ChooseDisk = %s, %v; want %s", d.Path, err, tt.got)
			}
		})
	}
}

func TestChooseDiskWithoutVirtio(t *testing.T) {
	tests := []struct {
		name string
		devs []fakeDev
		want string
		err  string
	}{
		{"first by name", []fakeDev{{name: "sdb", sectors: 10}, {name: "nvme0n1", sectors: 10}}, "/dev/nvme0n1", ""},
		{"nothing usable", []fakeDev{{name: "loop0", sectors: 10}, {name: "sr0", sectors: 10, removable: true}}, "",
			"no disk to install to: this machine has no writable, non-removable disk"},
		{"no block devices at all", nil, "", "no disk to install to: this machine has no writable, non-removable disk"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			devs, err := disk.Scan(fakeSysfs(t, tt.devs...))
			if err != nil {
				t.Fatal(err)
			}

			d, err := disk.ChooseDisk(devs, "")
			if fmt.Sprint(err) != map[bool]string{true: "<nil>", false: tt.err}[tt.err == ""] || d.Path != tt.want {
				t.Fatalf("ChooseDisk = %q, %v; want %q, %q", d.Path, err, tt.want, tt.err)
			}
		})
	}
}

func TestScanWithoutSysfs(t *testing.T) {
	devs, err := disk.Scan(filepath.Join(t.TempDir(), "nothing"))
	if err != nil || len(devs) != 0 {
		t.Fatalf("Scan = %v, %v; want nothing", devs, err)
	}
}
