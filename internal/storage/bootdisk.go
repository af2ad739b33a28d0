package storage

// BOOT: the installed versions (A and B) and GRUB, written from the
// installer image on install and upgrade, so that an installed node boots
// from its own disk.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/bootloader"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/installer"
)

// bootMountFlags: BOOT holds kernels, never anything to run from it.
const bootMountFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME

// pullTimeout bounds an installer pull: an unreachable registry must not
// hold an install for long.
const pullTimeout = 5 * time.Minute

// errNoInstallImage is WriteBootSlot's answer when the config names no
// installer image.
var errNoInstallImage = errors.New("machine.install.image is empty")

// BootWrite is what WriteBootSlot did.
type BootWrite struct {
	Label, Previous string // the slot written, and the default before
	Version         string
}

// WriteBootSlot pulls the installer image ref and writes it into the slot
// of BOOT that is not the default (A on a fresh disk), then makes that slot
// GRUB's default with the old one as its fallback, and writes GRUB's BIOS
// code. A failure before grub.cfg is replaced leaves the node booting what
// it booted.
func (v *Volumes) WriteBootSlot(ctx context.Context, sysDisk, ref string, cfg *configs.Config, w io.Writer) (BootWrite, error) {
	if ref == "" {
		return BootWrite{}, errNoInstallImage
	}

	var reg *configs.RegistriesConfig
	if cfg.Machine != nil {
		reg = cfg.Machine.Registries
	}

	devs, err := disk.Scan(v.opts.SysRoot)
	if err != nil {
		return BootWrite{}, err
	}

	bootDev, ok := disk.FindPartition(devs, sysDisk, disk.LabelBoot)
	if !ok {
		return BootWrite{}, fmt.Errorf("no %s partition on %s", disk.LabelBoot, sysDisk)
	}

	biosDev, ok := disk.FindPartition(devs, sysDisk, disk.LabelBIOS)
	if !ok {
		return BootWrite{}, fmt.Errorf("no %s partition on %s", disk.LabelBIOS, sysDisk)
	}

	pctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()

	start := time.Now()

	fmt.Fprintf(w, "[talos] pulling the installer image %s\n", ref)

	img, err := installer.Pull(pctx, ref, reg, w)
	if err != nil {
		return BootWrite{}, err
	}

	if _, err := disk.EnsureFilesystem(bootDev, disk.FSExt4); err != nil {
		return BootWrite{}, fmt.Errorf("%s: %w", disk.LabelBoot, err)
	}

	mnt := filepath.Join(filepath.Dir(v.opts.Platform.StateDir), ".boot")
	if err := disk.Mount(bootDev.Path, mnt, bootMountFlags); err != nil {
		return BootWrite{}, err
	}

	defer disk.Unmount(mnt) //nolint:errcheck // nothing is left to lose once the files are synced

	res, assets, err := installSlot(mnt, img, ref, cfg, w, start)
	if err != nil {
		return BootWrite{}, err
	}

	if err := writeBIOSBoot(v.opts.SysRoot, biosDev, assets); err != nil {
		return BootWrite{}, err
	}

	if err := writeEFIBoot(v.opts.SysRoot, devs, sysDisk, assets, w); err != nil {
		return BootWrite{}, err
	}

	return res, nil
}

// installSlot writes img into the slot of the BOOT filesystem at mnt that
// is not the default, through a staging directory, then makes it GRUB's
// default with the old default as the fallback. Until grub.cfg is
// replaced, what GRUB boots is untouched.
func installSlot(mnt string, img v1.Image, ref string, cfg *configs.Config, w io.Writer, start time.Time) (BootWrite, *installer.Assets, error) {
	conf, err := readGrubConfig(mnt)
	if err != nil {
		return BootWrite{}, nil, err
	}

	res := BootWrite{Label: bootloader.LabelA, Previous: conf.Default}
	if conf.Default != "" {
		res.Label = bootloader.Other(conf.Default)
	}

	// The image goes into a staging directory first: the slot it replaces
	// (the fallback) stays whole until the new one is.
	slot := filepath.Join(mnt, res.Label)
	staging := slot + ".new"

	if err := os.RemoveAll(staging); err != nil {
		return BootWrite{}, nil, err
	}

	if err := os.MkdirAll(staging, 0o755); err != nil {
		return BootWrite{}, nil, err
	}

	assets, err := installer.Unpack(img, func(name string, r io.Reader) error {
		base := bootloader.KernelName
		if name == installer.InitramfsPath {
			base = bootloader.InitramfsName
		}

		return writeSynced(filepath.Join(staging, base), r)
	})
	if err != nil {
		os.RemoveAll(staging) //nolint:errcheck // the unpack error is the one to report

		if errors.Is(err, installer.ErrNotInstaller) {
			return BootWrite{}, nil, fmt.Errorf("%s: %w", ref, err)
		}

		if errors.Is(err, syscall.ENOSPC) {
			return BootWrite{}, nil, fmt.Errorf("%s: BOOT is full: %w", ref, err)
		}

		return BootWrite{}, nil, fmt.Errorf("%s: %w", ref, err)
	}

	if err := os.RemoveAll(slot); err != nil {
		return BootWrite{}, nil, err
	}

	if err := os.Rename(staging, slot); err != nil {
		return BootWrite{}, nil, err
	}

	res.Version = assets.Version
	if res.Version == "" {
		res.Version = "unknown"
	}

	fmt.Fprintf(w, "[talos] wrote %s %s to %s (kernel %d bytes, initramfs %d bytes) in %s\n", ref, res.Version, res.Label,
		assets.Sizes[installer.KernelPath], assets.Sizes[installer.InitramfsPath], time.Since(start).Round(100*time.Millisecond))

	cmdline, err := installCmdline(cfg)
	if err != nil {
		return BootWrite{}, nil, err
	}

	conf.Put(bootloader.Entry{Label: res.Label, Version: res.Version, Cmdline: cmdline})
	conf.Serial = strings.Contains(" "+cmdline, " console=ttyS")

	if err := writeGrubConfig(mnt, conf); err != nil {
		return BootWrite{}, nil, err
	}

	return res, assets, nil
}

// readGrubConfig reads BOOT's grub.cfg, or returns an empty one.
func readGrubConfig(mnt string) (*bootloader.Config, error) {
	data, err := os.ReadFile(filepath.Join(mnt, bootloader.ConfigPath))
	if errors.Is(err, fs.ErrNotExist) {
		return &bootloader.Config{Timeout: bootloader.DefaultTimeout}, nil
	}

	if err != nil {
		return nil, err
	}

	return bootloader.Parse(data)
}

func writeGrubConfig(mnt string, conf *bootloader.Config) error {
	data, err := conf.Render()
	if err != nil {
		return err
	}

	p := filepath.Join(mnt, bootloader.ConfigPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}

	return atomicfile.Write(p, data, 0o644)
}

// writeBIOSBoot puts GRUB's boot sector and core image on the disk of the
// BIOS boot partition bios.
func writeBIOSBoot(sysRoot string, bios disk.BlockDevice, a *installer.Assets) error {
	start, err := partitionStart(sysRoot, bios)
	if err != nil {
		return err
	}

	f, err := os.OpenFile("/dev/"+bios.Disk, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()

	if err := bootloader.InstallBIOS(f, a.BootImg, a.CoreImg, start, uint64(bios.Size)/512); err != nil {
		return err
	}

	return f.Sync()
}

// writeEFIBoot puts GRUB for UEFI on the disk's EFI partition, as a FAT
// filesystem holding EFI/BOOT/BOOTX64.EFI, the path firmware boots without
// an NVRAM entry. It reads the same grub.cfg on BOOT as the BIOS GRUB, so
// A/B and rollback are the same on both firmwares. The partition is
// written only when it does not already hold these bytes: the same GRUB
// from one version to the next leaves it untouched, so an upgrade rarely
// rewrites it at all. An installer image from before UEFI has no
// BOOTX64.EFI: the EFI partition is then left as it is.
func writeEFIBoot(sysRoot string, devs []disk.BlockDevice, sysDisk string, a *installer.Assets, w io.Writer) error {
	if a.EFIImg == nil {
		fmt.Fprintf(w, "[talos] the installer image has no GRUB for UEFI (%s): the disk boots on BIOS only\n", installer.EFIImgPath)
		return nil
	}

	esp, ok := disk.FindPartition(devs, sysDisk, disk.LabelEFI)
	if !ok {
		return fmt.Errorf("no %s partition on %s", disk.LabelEFI, sysDisk)
	}

	start, err := partitionStart(sysRoot, esp)
	if err != nil {
		return err
	}

	img, err := bootloader.RenderESP(a.EFIImg, esp.Size, uint32(start))
	if err != nil {
		return err
	}

	f, err := os.OpenFile(esp.Path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()

	cur := make([]byte, len(img))
	if _, err := io.ReadFull(f, cur); err == nil && bytes.Equal(cur, img) {
		return nil
	}

	if _, err := f.WriteAt(img, 0); err != nil {
		return fmt.Errorf("write the %s partition: %w", disk.LabelEFI, err)
	}

	return f.Sync()
}

// partitionStart is where a partition starts on its disk, in sectors.
func partitionStart(sysRoot string, p disk.BlockDevice) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(sysRoot, "class", "block", p.Name, "start"))
	if err != nil {
		return 0, fmt.Errorf("find the %s partition: %w", p.PartName, err)
	}

	start, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("find the %s partition: %w", p.PartName, err)
	}

	return start, nil
}

// installCmdline is the kernel command line of an installed version: the
// running one without what the boot loader adds, plus
// machine.install.extraKernelArgs.
func installCmdline(cfg *configs.Config) (string, error) {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return "", err
	}

	var out []string

	for _, f := range strings.Fields(string(b)) {
		if strings.HasPrefix(f, "BOOT_IMAGE=") || strings.HasPrefix(f, "initrd=") {
			continue
		}

		out = append(out, f)
	}

	if cfg.Machine != nil && cfg.Machine.Install != nil {
		out = append(out, cfg.Machine.Install.ExtraKernelArgs...)
	}

	return strings.Join(out, " "), nil
}

// writeSynced writes r to path through a temporary file that is synced
// and renamed, so that a slot never holds half a kernel under its name.
func writeSynced(path string, r io.Reader) error {
	tmp := path + ".tmp"

	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}

	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(tmp)

		return err
	}

	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)

		return err
	}

	if err := f.Close(); err != nil {
		return err
	}

	return os.Rename(tmp, path)
}
