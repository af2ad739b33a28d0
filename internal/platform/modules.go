package platform

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/kmod"
)

// BootModules are the drivers PID 1 loads first on metal, before it looks
// for disks and links: virtio (QEMU and most clouds), NVMe, AHCI/SATA and
// SCSI disks. Those the image carries are loaded, with their
// dependencies, and the others skipped, so that one list serves any
// initramfs, and a kernel with them built in needs none.
var BootModules = []string{
	"virtio_pci", "virtio_blk", "virtio_scsi", "virtio_net", "virtio_rng",
	"nvme", "ahci", "sd_mod",
}

// LoadBootModules loads the kernel modules the image carries in dir (the
// running kernel's modules directory when empty): BootModules first, then
// the others modules.boot names, or, in an image without one, every
// module its modules.dep lists. The image decides what a node loads at
// boot: the link types networkd creates (bonding, 8021q, wireguard) and
// dm_crypt (with the xts and ecb crypto templates) must be in the kernel
// before they are used, while what modules.boot leaves out (the NFS and
// Ceph clients) waits for the kernel to ask /sbin/modprobe for it.
func LoadBootModules(dir string, log io.Writer) error {
	if dir == "" {
		var err error
		if dir, err = kmod.DefaultModulesDir(); err != nil {
			return err
		}
	}

	avail, err := bootModules(dir)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(log, "[talos] no %s: no kernel modules to load\n", filepath.Join(dir, "modules.dep"))
		return nil
	}

	if err != nil {
		return fmt.Errorf("boot modules: %w", err)
	}

	names := loadOrder(avail)
	if len(names) == 0 {
		return nil
	}

	mods := make([]configs.KernelModule, len(names))
	for i, n := range names {
		mods[i] = configs.KernelModule{Name: n}
	}

	if err := kmod.Load(mods, kmod.Options{ModulesDir: dir}); err != nil {
		return fmt.Errorf("boot modules: %w", err)
	}

	fmt.Fprintf(log, "[talos] loaded kernel modules %s\n", strings.Join(names, " "))

	return nil
}

// loadOrder puts the BootModules among avail first, in their order, then
// the rest of avail as the image lists them.
func loadOrder(avail []string) []string {
	out := make([]string, 0, len(avail))

	for _, m := range BootModules {
		if slices.Contains(avail, m) {
			out = append(out, m)
		}
	}

	for _, m := range avail {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}

	return out
}

// bootModules names the modules dir's modules.boot lists, or, without
// one, every module of its modules.dep.
func bootModules(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "modules.boot"))
	if errors.Is(err, fs.ErrNotExist) {
		return imageModules(dir)
	}

	if err != nil {
		return nil, err
	}

	var out []string

	for _, l := range strings.Fields(string(b)) {
		out = append(out, strings.ReplaceAll(l, "-", "_"))
	}

	return out, nil
}

// imageModules names the modules in dir's modules.dep, in its order,
// dashes as underscores (the kernel's canonical spelling).
func imageModules(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer f.Close()

	var out []string

	sc := bufio.NewScanner(f)
	for sc.Scan() {
		path, _, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}

		name := filepath.Base(path)
		name = strings.ReplaceAll(name[:strings.Index(name+".ko", ".ko")], "-", "_")

		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}

	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}

	return out, nil
}
