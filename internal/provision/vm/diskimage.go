package vm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/talosbox/talosbox/internal/bootmedia"
	"github.com/talosbox/talosbox/internal/disk"
)

// Nodes booted from a disk image (talosbox imager metal --platform
// nocloud) start from their disks: the image is each node's disk, grown
// to its size (the node fits its partition table to it on the first
// boot). Like ISO nodes they take their addresses and hostnames from a
// NoCloud seed each, and their configs through maintenance mode.

// checkDiskImageTools checks what reading a disk image needs, before
// anything is made.
func checkDiskImageTools(image string) error {
	if _, err := os.Stat(image); err != nil {
		return fmt.Errorf("--disk-image-path: %w", err)
	}

	for _, tool := range []struct{ name, pkg string }{{"xorriso", "xorriso"}, {"debugfs", "e2fsprogs"}} {
		if _, err := exec.LookPath(tool.name); err != nil {
			return fmt.Errorf("--disk-image-path: %s (apt-get install %s) is needed: %w", tool.name, tool.pkg, err)
		}
	}

	return nil
}

// makeDisk makes a node's sparse disk of size bytes at path: empty, or
// the disk image expanded into it and grown. A disk image whose nodes
// would not read their seed is refused.
func makeDisk(path, image string, size int64) error {
	if image != "" {
		err := bootmedia.ExpandImage(image, path, size)
		if errors.Is(err, bootmedia.ErrImageTooLarge) {
			return fmt.Errorf("the disk image %s is larger than the node's disk (%d MiB)", image, size>>20)
		}

		if err != nil {
			return err
		}

		if err := checkDiskImage(path, image); err != nil {
			os.Remove(path)
			return err
		}
	}

	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}

	st, err := f.Stat()
	if err == nil && st.Size() > size {
		err = fmt.Errorf("the disk image (%d MiB) is larger than the node's disk (%d MiB)", st.Size()>>20, size>>20)
	}

	if err == nil {
		err = f.Truncate(size)
	}

	if cerr := f.Close(); err == nil {
		err = cerr
	}

	return err
}

// checkDiskImage reads the grub.cfg on the expanded image's BOOT and
// refuses an image that boots another platform than nocloud: its nodes
// would come up without an address on the segment.
func checkDiskImage(path, image string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()

	parts, err := disk.ReadTable(f)
	if err != nil {
		return fmt.Errorf("--disk-image-path %s: not a disk image: %w", image, err)
	}

	for _, p := range parts {
		if p.Label != disk.LabelBoot {
			continue
		}

		out, err := exec.Command("debugfs", "-R", "cat /grub/grub.cfg", fmt.Sprintf("%s?offset=%d", path, p.Start*disk.SectorSize)).Output()
		if err != nil || !bytes.Contains(out, []byte("menuentry")) {
			return fmt.Errorf("--disk-image-path %s: no grub.cfg on its %s partition: not an image of talosbox imager metal (%v)", image, disk.LabelBoot, err)
		}

		if !bytes.Contains(out, []byte("talos.platform=nocloud")) {
			return fmt.Errorf("--disk-image-path %s boots another platform than nocloud: its nodes would have no address on the segment; make one with talosbox imager metal --platform nocloud", image)
		}

		return nil
	}

	return errors.New("--disk-image-path " + image + ": no " + disk.LabelBoot + " partition: not an image of talosbox imager metal")
}
