package disk

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dustin/go-humanize"
)

// ChooseDisk picks the install disk among devs: the one whose device path
// is want (as machine.install.disk names it, e.g. /dev/vda), or with want
// empty the first virtio disk, else the first disk by name.
func ChooseDisk(devs []BlockDevice, want string) (BlockDevice, error) {
	disks := Disks(devs)

	if want != "" {
		clean := filepath.Clean(want)
		for _, d := range disks {
			if d.Path == clean {
				return d, nil
			}
		}

		return BlockDevice{}, fmt.Errorf("install disk %s: no such disk here (disks: %s)", want, Describe(disks))
	}

	for _, d := range disks {
		if strings.HasPrefix(d.Name, "vd") {
			return d, nil
		}
	}

	if len(disks) == 0 {
		return BlockDevice{}, fmt.Errorf("no disk to install to: this machine has no writable, non-removable disk")
	}

	return disks[0], nil
}

// Install lays layout out on the disk at path: the partitions that have a
// filesystem are formatted, META gets an empty Talos META, the others get
// their first and last MiB zeroed so that no signature from the disk's
// past survives, then the new GPT is written. Everything goes through the disk itself before the
// kernel re-reads the table, so the partitions' devices start with
// nothing stale in their caches. path may be an image file (tests): the
// re-read is then skipped.
func Install(path string, layout []PartitionSpec, log io.Writer) ([]Extent, error) {
	f, err := OpenExclusive(path)
	if err != nil {
		return nil, fmt.Errorf("install to %s: %w", path, err)
	}
	defer f.Close()

	size, err := Size(f)
	if err != nil {
		return nil, fmt.Errorf("install to %s: %w", path, err)
	}

	plan, err := Plan(layout, size)
	if err != nil {
		return nil, fmt.Errorf("install to %s: %w", path, err)
	}

	for _, e := range plan {
		r := Region{File: f, Offset: e.Offset(), Size: e.Bytes()}

		content := e.FS

		switch {
		case e.FS == FSExt4:
			err = FormatExt4(r, e.Label)
		case e.Label == LabelMeta:
			// Written over in full: nothing of the old contents is left.
			err = WriteMeta(r)
			content = "empty META"
		default:
			err = Wipe(r)
		}

		if err != nil {
			return nil, fmt.Errorf("install to %s: %w", path, err)
		}

		fmt.Fprintf(log, "[talos] partition %d %s: %s%s\n", e.Index, e.Label, humanize.IBytes(uint64(e.Bytes())), map[bool]string{true: ", " + content}[content != ""])
	}

	if err := WriteTable(f, size, plan); err != nil {
		return nil, fmt.Errorf("install to %s: %w", path, err)
	}

	if isBlockDevice(f) {
		if err := rereadPartitions(f); err != nil {
			return nil, fmt.Errorf("install to %s: %w", path, err)
		}
	}

	return plan, nil
}

// EnsureFilesystem makes sure the partition dev holds fs (FSExt4): an
// empty partition (a reset wiped it) is formatted and formatted is true;
// any other filesystem or a LUKS header is an error, never overwritten.
func EnsureFilesystem(dev BlockDevice, fs string) (formatted bool, err error) {
	if fs != FSExt4 {
		return false, fmt.Errorf("%s: unsupported filesystem %q", dev.PartName, fs)
	}

	f, err := OpenExclusive(dev.Path)
	if err != nil {
		return false, fmt.Errorf("%s: %w", dev.PartName, err)
	}
	defer f.Close()

	r := Region{File: f, Size: dev.Size}

	found, err := Probe(r)
	if err != nil {
		return false, fmt.Errorf("%s: %w", dev.PartName, err)
	}

	switch found {
	case fs:
		return false, nil
	case "":
		if err := FormatExt4(r, dev.PartName); err != nil {
			return false, err
		}

		return true, nil
	}

	return false, fmt.Errorf("%s (%s) holds %s, not %s: refusing to format over it", dev.PartName, dev.Path, found, fs)
}

// WipeDevice removes the filesystem signature of a partition (Wipe), so
// that the next boot formats it afresh. It must not be mounted.
func WipeDevice(dev BlockDevice) error {
	f, err := OpenExclusive(dev.Path)
	if err != nil {
		return fmt.Errorf("wipe %s: %w", dev.PartName, err)
	}
	defer f.Close()

	return Wipe(Region{File: f, Size: dev.Size})
}
