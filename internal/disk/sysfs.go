package disk

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// BlockDevice is a disk or a partition as sysfs shows it.
type BlockDevice struct {
	Name string // vda, vda5
	// Path is the device node, /dev/<DEVNAME>.
	Path string
	// Disk is the disk a partition is on (vda for vda5); empty for a disk.
	Disk string
	// PartN and PartName are a partition's GPT index and name (label).
	PartN    int
	PartName string
	Size     int64 // bytes
	ReadOnly bool
	// Removable is a disk's removable flag (USB sticks, CD drives).
	Removable bool

	// What a disk selector matches on (disks only; empty when the kernel
	// does not say). DeviceName is device/name (MMC cards).
	DeviceName, Model, Serial, Modalias, UUID, WWID string
	// BusPath is the disk's place under /sys/devices without the block
	// part: /pci0000:00/0000:00:05.0/virtio2.
	BusPath string
	// Transport is the bus subsystem: virtio, scsi, nvme, mmc, ...
	Transport  string
	Rotational bool

	// Major and Minor are the device numbers; SectorSize and IOSize the
	// queue's logical block and minimum I/O sizes (disks).
	Major, Minor       int
	SectorSize, IOSize int64
}

// IsPartition says whether the device is a partition.
func (b BlockDevice) IsPartition() bool { return b.Disk != "" }

// Scan lists the block devices under sysRoot/class/block (sysRoot is
// /sys), sorted by name.
func Scan(sysRoot string) ([]BlockDevice, error) {
	dir := filepath.Join(sysRoot, "class", "block")

	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("scan block devices: %w", err)
	}

	out := make([]BlockDevice, 0, len(entries))

	for _, e := range entries {
		bd, err := readDevice(dir, e.Name())
		if err != nil {
			return nil, fmt.Errorf("scan block devices: %w", err)
		}

		out = append(out, bd)
	}

	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })

	return out, nil
}

func readDevice(classDir, name string) (BlockDevice, error) {
	base := filepath.Join(classDir, name)

	uevent, err := os.ReadFile(filepath.Join(base, "uevent"))
	if err != nil {
		return BlockDevice{}, err
	}

	kv := parseUevent(uevent)
	bd := BlockDevice{Name: name, PartName: kv["PARTNAME"], Path: "/dev/" + name}
	bd.Major, _ = strconv.Atoi(kv["MAJOR"])
	bd.Minor, _ = strconv.Atoi(kv["MINOR"])

	if dn := kv["DEVNAME"]; dn != "" {
		bd.Path = "/dev/" + dn
	}

	if kv["DEVTYPE"] == "partition" {
		bd.PartN, _ = strconv.Atoi(kv["PARTN"])

		// class/block/vda5 links to .../block/vda/vda5: the partition's
		// directory sits in its disk's.
		real, err := filepath.EvalSymlinks(base)
		if err != nil {
			return BlockDevice{}, err
		}

		bd.Disk = filepath.Base(filepath.Dir(real))
	}

	sectors, err := readInt(filepath.Join(base, "size"))
	if err != nil {
		return BlockDevice{}, err
	}

	// sysfs counts 512-byte sectors whatever the device's sector size.
	bd.Size = sectors * 512

	ro, _ := readInt(filepath.Join(base, "ro"))
	bd.ReadOnly = ro == 1

	if !bd.IsPartition() {
		rm, _ := readInt(filepath.Join(base, "removable"))
		bd.Removable = rm == 1

		readIdentity(&bd, classDir, base)
	}

	return bd, nil
}

// readIdentity fills what a selector matches on. Each attribute lives in
// the block directory or in its device's, depending on the driver.
func readIdentity(bd *BlockDevice, classDir, base string) {
	attr := func(names ...string) string {
		for _, n := range names {
			if b, err := os.ReadFile(filepath.Join(base, n)); err == nil {
				if v := strings.TrimSpace(string(b)); v != "" {
					return v
				}
			}
		}

		return ""
	}

	bd.DeviceName = attr("device/name")
	bd.Model = attr("device/model")
	bd.Serial = attr("serial", "device/serial")
	bd.Modalias = attr("device/modalias")
	bd.UUID = attr("uuid", "device/uuid")
	bd.WWID = attr("wwid", "device/wwid")

	rot, _ := readInt(filepath.Join(base, "queue", "rotational"))
	bd.Rotational = rot == 1
	bd.SectorSize, _ = readInt(filepath.Join(base, "queue", "logical_block_size"))
	bd.IOSize, _ = readInt(filepath.Join(base, "queue", "minimum_io_size"))

	if sub, err := filepath.EvalSymlinks(filepath.Join(base, "device", "subsystem")); err == nil {
		bd.Transport = filepath.Base(sub)
	}

	// class/block/sda → ../../devices/pci0000:00/.../block/sda.
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		return
	}

	devices, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(filepath.Dir(classDir)), "devices"))
	if err != nil {
		return
	}

	if rel, err := filepath.Rel(devices, filepath.Dir(filepath.Dir(real))); err == nil && !strings.HasPrefix(rel, "..") {
		bd.BusPath = "/" + rel
	}
}

func parseUevent(b []byte) map[string]string {
	kv := map[string]string{}

	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = v
		}
	}

	return kv
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}

	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}

	return n, nil
}

// virtualPrefixes name block devices that are never a system disk:
// loop, RAM and compressed-RAM disks, optical and floppy drives, device
// mapper, md and network block devices.
var virtualPrefixes = []string{"loop", "ram", "zram", "sr", "fd", "dm-", "md", "nbd"}

// Disks are the whole disks that could hold a system: writable, not
// removable, not virtual, not empty.
func Disks(devs []BlockDevice) []BlockDevice {
	var out []BlockDevice

	for _, d := range devs {
		if d.IsPartition() || d.ReadOnly || d.Removable || d.Size == 0 || hasAnyPrefix(d.Name, virtualPrefixes) {
			continue
		}

		out = append(out, d)
	}

	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}

	return false
}

// FindPartition returns the partition labelled label; on disk when disk is
// not empty, else the first one by name.
func FindPartition(devs []BlockDevice, disk, label string) (BlockDevice, bool) {
	for _, d := range devs {
		if d.IsPartition() && d.PartName == label && (disk == "" || d.Disk == disk) {
			return d, true
		}
	}

	return BlockDevice{}, false
}

// Describe lists disks for an error message: "/dev/vda (6.0 GiB)".
func Describe(disks []BlockDevice) string {
	if len(disks) == 0 {
		return "none"
	}

	parts := make([]string, len(disks))
	for i, d := range disks {
		parts[i] = fmt.Sprintf("%s (%.1f GiB)", d.Path, float64(d.Size)/(1<<30))
	}

	return strings.Join(parts, ", ")
}
