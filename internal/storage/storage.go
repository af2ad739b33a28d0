package storage

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/platform"
)

// SysRoot is where sysfs is mounted on metal.
const SysRoot = "/sys"

// Options is what the volumes read off the node that owns them.
type Options struct {
	// Platform gives STATE's and EPHEMERAL's directories and says
	// whether the node is on metal and owns its root.
	Platform platform.Platform
	// SysRoot is where sysfs is, where disks are found (SysRoot).
	SysRoot string
	// MetaPath is a META partition (or image file) to use instead of the
	// one on the system disk (tests).
	MetaPath string
	// Cmdline is the kernel command line as the boot has read it so far:
	// an install reads its talosbox.install.disk= when it picks a disk.
	Cmdline func() platform.Cmdline
	// Store is the node's bus, where VolumeStatuses and MetaKeys go,
	// written as Owner.
	Store *bus.Store
	Owner string
	// Logf reports what has no task's writer to go to (a failed status
	// write, a META copy repaired by an API edit).
	Logf func(format string, args ...any)
}

// Volumes is the node's system disk and user disks: STATE, EPHEMERAL,
// META, BOOT and machine.disks, found, made, opened, mounted and wiped.
// machined's boot and reset sequences call it; its lock is its own.
type Volumes struct {
	opts Options

	mu      sync.Mutex
	sysDisk string   // metal: the disk holding STATE ("vda"), "" before an install
	mounts  []string // metal: volumes mounted, in order
	// stateEmpty: STATE exists but holds nothing (a reset wiped it); it is
	// made, encrypted or not, when a config arrives.
	stateEmpty bool
	// stateErr: STATE exists but could not be opened (a wrong key); the
	// node runs in maintenance mode and refuses to install over it.
	stateErr error
	// crypted maps a label to its partition while its dm-crypt mapping
	// is open.
	crypted map[string]disk.BlockDevice

	meta metaState
}

// NewVolumes returns the volumes of a node; nothing is touched until the
// boot calls them.
func NewVolumes(opts Options) *Volumes {
	if opts.SysRoot == "" {
		opts.SysRoot = SysRoot
	}

	if opts.Cmdline == nil {
		opts.Cmdline = func() platform.Cmdline { return platform.Cmdline{} }
	}

	return &Volumes{opts: opts}
}

func (v *Volumes) logf(format string, args ...any) {
	if v.opts.Logf != nil {
		v.opts.Logf(format, args...)
	}
}

// StateOpen says whether a STATE partition is mounted with what it holds:
// found, not left empty by a reset, and opened.
func (v *Volumes) StateOpen() bool {
	v.mu.Lock()
	defer v.mu.Unlock()

	return v.sysDisk != "" && !v.stateEmpty && v.stateErr == nil
}

// MetaTag reads one tag of the node's META.
func (v *Volumes) MetaTag(tag uint8) ([]byte, bool) {
	v.meta.mu.Lock()
	defer v.meta.mu.Unlock()

	if v.meta.path == "" {
		return nil, false
	}

	m, err := meta.Open(v.meta.path)
	if err != nil {
		return nil, false
	}

	return m.ReadTag(tag)
}

// RevertBoot swaps GRUB's default and fallback on the BOOT of sysDisk and
// returns the slot that boots next.
func (v *Volumes) RevertBoot(sysDisk string) (string, error) {
	devs, err := disk.Scan(v.opts.SysRoot)
	if err != nil {
		return "", err
	}

	bootDev, ok := disk.FindPartition(devs, sysDisk, disk.LabelBoot)
	if !ok {
		return "", fmt.Errorf("no %s partition on %s", disk.LabelBoot, sysDisk)
	}

	mnt := filepath.Join(filepath.Dir(v.opts.Platform.StateDir), ".boot")
	if err := disk.Mount(bootDev.Path, mnt, bootMountFlags); err != nil {
		return "", err
	}

	defer disk.Unmount(mnt) //nolint:errcheck // grub.cfg was written atomically and synced

	conf, err := readGrubConfig(mnt)
	if err != nil {
		return "", err
	}

	if conf.Default == "" {
		return "", fmt.Errorf("BOOT holds no installation (no grub.cfg)")
	}

	label, err := conf.Revert()
	if err != nil {
		return "", err
	}

	return label, writeGrubConfig(mnt, conf)
}
