package bootmedia

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"

	"github.com/talosbox/talosbox/internal/bootloader"
	"github.com/talosbox/talosbox/internal/disk"
)

// DiskImageName is the raw image's name, as Talos's imager names its metal
// image; make disk-image compresses it to DiskImageName + ".zst".
const DiskImageName = "metal-amd64.raw"

// ImageEphemeralSize is EPHEMERAL's size in the image: a placeholder the
// node grows to the end of whatever disk the image was written to, on
// its first boot, before anything formats it.
const ImageEphemeralSize = disk.MiB

// ImageLayout is the image's partitions: the system disk's (disk.SystemLayout),
// EPHEMERAL shrunk to its placeholder. STATE and EPHEMERAL are left empty:
// the node formats STATE when its config arrives (as after a reset) and
// EPHEMERAL once it has grown.
func ImageLayout() []disk.PartitionSpec {
	layout := make([]disk.PartitionSpec, 0, len(disk.SystemLayout))

	for _, s := range disk.SystemLayout {
		s.FS = disk.FSNone
		if s.Label == disk.LabelEphemeral {
			s.Size, s.MinSize = 0, ImageEphemeralSize
		}

		layout = append(layout, s)
	}

	return layout
}

// DiskImage writes a raw disk image that is already installed, as Talos's
// metal image is: a GPT with the system layout, GRUB for BIOS (boot.img
// and core.img in the BIOS boot partition) and for UEFI (BOOTX64.EFI on
// the EFI partition), and BOOT holding slot A (the kernel, the initramfs
// and grub.cfg with the command line) made by mke2fs -d. Written to a
// disk (dd, qemu-img, a cloud's image import) it boots on either
// firmware; the node grows EPHEMERAL to the disk's end and takes its
// config from the command line, the platform, or apply-config --insecure
// in maintenance mode. An out ending in .zst is compressed with zstd.
// Every GUID, UUID and date comes from the version and the epoch, so the
// same inputs give the same bytes. It needs grub-mkimage, GRUB's modules
// and e2fsprogs (mke2fs, debugfs).
func DiskImage(ctx context.Context, o Options, out string) error {
	if err := o.defaults(); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}

	cmdline, err := o.cmdline()
	if err != nil {
		return fmt.Errorf("disk image: %w", err)
	}

	layout := ImageLayout()
	size := disk.MinDiskSize(layout)

	plan, err := disk.Plan(layout, size)
	if err != nil {
		return fmt.Errorf("disk image: %w", err)
	}

	for i := range plan {
		plan[i].GUID = o.guid("partition " + plan[i].Label)
	}

	raw := out
	if strings.HasSuffix(out, ".zst") {
		raw = strings.TrimSuffix(out, ".zst") + ".tmp"
		defer os.Remove(raw)
	}

	tmp := raw + ".part"
	defer os.Remove(tmp)

	if err := o.writeImage(ctx, tmp, size, plan, cmdline); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}

	if err := os.Rename(tmp, raw); err != nil {
		return err
	}

	if raw == out {
		return nil
	}

	fmt.Fprintf(o.Log, "disk image: zstd: %s\n", out)

	if err := compressZstd(raw, out); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}

	return nil
}

// guid is a name-based (SHA-1) UUID of the image's version, epoch and
// what it names, upper case as GPT tools print them.
func (o *Options) guid(what string) string {
	name := fmt.Sprintf("talosbox metal image %s %d %s", o.Version, o.Epoch.Unix(), what)

	return strings.ToUpper(uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String())
}

func (o *Options) writeImage(ctx context.Context, path string, size int64, plan []disk.Extent, cmdline string) error {
	bootImg, err := os.ReadFile(filepath.Join(dirOr(o.GrubBIOSDir, bootloader.BIOS.Dir), "boot.img"))
	if err != nil {
		return fmt.Errorf("GRUB's boot.img (apt-get install %s): %w", bootloader.BIOS.Package, err)
	}

	fmt.Fprintf(o.Log, "disk image: GRUB for BIOS and UEFI, finding BOOT by its label\n")

	coreImg, err := bootloader.MakeImage(ctx, bootloader.BIOS, o.GrubBIOSDir, bootloader.EarlyConfig)
	if err != nil {
		return err
	}

	efiImg, err := bootloader.MakeImage(ctx, bootloader.UEFI, o.GrubEFIDir, bootloader.EarlyConfig)
	if err != nil {
		return err
	}

	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()

	if err := f.Truncate(size); err != nil {
		return err
	}

	part := map[string]disk.Extent{}
	for _, e := range plan {
		part[e.Label] = e
	}

	// BOOT first: mke2fs finds nothing of ours to warn about yet.
	if err := o.writeBoot(ctx, path, part[disk.LabelBoot], cmdline); err != nil {
		return err
	}

	esp := part[disk.LabelEFI]

	espImg, err := bootloader.RenderESP(efiImg, esp.Bytes(), uint32(esp.Start))
	if err != nil {
		return err
	}

	if _, err := f.WriteAt(espImg, esp.Offset()); err != nil {
		return err
	}

	meta := part[disk.LabelMeta]
	if err := disk.WriteMeta(disk.Region{File: f, Offset: meta.Offset(), Size: meta.Bytes()}); err != nil {
		return err
	}

	if err := disk.WriteTableGUID(f, size, plan, o.guid("disk")); err != nil {
		return err
	}

	// After the table: GRUB's boot sector keeps the protective MBR's
	// partition entries.
	bios := part[disk.LabelBIOS]
	if err := bootloader.InstallBIOS(f, bootImg, coreImg, bios.Start, uint64(bios.Bytes())/disk.SectorSize); err != nil {
		return err
	}

	fmt.Fprintf(o.Log, "disk image: GPT: %s\n", describePlan(plan))

	return f.Close()
}

// writeBoot makes BOOT: slot A and grub.cfg, as an install writes them,
// by mke2fs -d from a staging directory, then stamps every inode with the
// epoch and root's ownership (mke2fs copies the staging files' own change
// times and owners, which no caller can choose).
func (o *Options) writeBoot(ctx context.Context, img string, e disk.Extent, cmdline string) error {
	stage, err := os.MkdirTemp(filepath.Dir(img), ".boot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)

	conf := &bootloader.Config{Timeout: bootloader.DefaultTimeout, Serial: strings.Contains(" "+cmdline, " console=ttyS")}
	conf.Put(bootloader.Entry{Label: bootloader.LabelA, Version: o.Version, Cmdline: cmdline})

	grubCfg, err := conf.Render()
	if err != nil {
		return err
	}

	// In a fixed order: mke2fs -d adds entries as readdir lists them.
	paths := []string{bootloader.LabelA, path0(bootloader.ConfigPath)}
	for _, d := range paths {
		if err := os.Mkdir(filepath.Join(stage, d), 0o755); err != nil {
			return err
		}
	}

	slot := filepath.Join(stage, bootloader.LabelA)
	if err := copyFile(o.Kernel, filepath.Join(slot, bootloader.KernelName)); err != nil {
		return err
	}

	if err := o.writeInitramfs(filepath.Join(slot, bootloader.InitramfsName)); err != nil {
		return err
	}

	if err := os.WriteFile(filepath.Join(stage, bootloader.ConfigPath), grubCfg, 0o644); err != nil {
		return err
	}

	paths = append(paths, filepath.Join(bootloader.LabelA, bootloader.KernelName), filepath.Join(bootloader.LabelA, bootloader.InitramfsName),
		bootloader.ConfigPath)

	if err := stamp(stage, o.Epoch); err != nil {
		return err
	}

	epoch := strconv.FormatInt(o.Epoch.Unix(), 10)
	fsUUID := strings.ToLower(o.guid("BOOT filesystem"))

	// discard punches the region out of the (sparse) image first, so the
	// inode tables read as zeros without being written.
	mkfs := exec.CommandContext(ctx, "mke2fs", "-q", "-F", "-F", "-t", "ext4", "-b", "4096", "-L", disk.LabelBoot, "-U", fsUUID,
		"-E", fmt.Sprintf("offset=%d,hash_seed=%s,root_owner=0:0,discard", e.Offset(), fsUUID), "-d", stage,
		img, strconv.FormatInt(e.Bytes()/4096, 10))
	mkfs.Env = append(os.Environ(), "E2FSPROGS_FAKE_TIME="+epoch)

	fmt.Fprintf(o.Log, "disk image: BOOT (%d MiB, ext4): slot A, %s\n", e.Bytes()/disk.MiB, o.Version)

	if b, err := mkfs.CombinedOutput(); err != nil {
		return fmt.Errorf("mke2fs BOOT (apt-get install e2fsprogs): %w: %s", err, bytes.TrimSpace(b))
	}

	var cmds strings.Builder

	for _, p := range append([]string{"/", "/lost+found"}, prefixAll("/", paths)...) {
		for _, field := range []string{"ctime", "atime", "mtime", "crtime"} {
			fmt.Fprintf(&cmds, "set_inode_field %s %s @%s\n", p, field, epoch)
		}

		fmt.Fprintf(&cmds, "set_inode_field %s uid 0\nset_inode_field %s gid 0\n", p, p)
	}

	fix := exec.CommandContext(ctx, "debugfs", "-w", "-f", "-", fmt.Sprintf("%s?offset=%d", img, e.Offset()))
	fix.Env = mkfs.Env
	fix.Stdin = strings.NewReader(cmds.String())

	b, err := fix.CombinedOutput()
	if err != nil || bytes.Contains(b, []byte("set_inode_field: ")) {
		return fmt.Errorf("debugfs BOOT: %v: %s", err, bytes.TrimSpace(b))
	}

	return nil
}

// path0 is the first element of a slash-separated path.
func path0(p string) string {
	first, _, _ := strings.Cut(p, "/")
	return first
}

func prefixAll(prefix string, ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = prefix + filepath.ToSlash(p)
	}

	return out
}

func describePlan(plan []disk.Extent) string {
	parts := make([]string, len(plan))
	for i, e := range plan {
		parts[i] = fmt.Sprintf("%s %d MiB", e.Label, e.Bytes()/disk.MiB)
	}

	return strings.Join(parts, ", ")
}

// compressZstd writes src to dst compressed with zstd, on one goroutine
// so that the frames are the same bytes on any machine.
func compressZstd(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()

	tmp := dst + ".tmp"

	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)

	enc, err := zstd.NewWriter(out, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedBetterCompression))
	if err != nil {
		out.Close()
		return err
	}

	if _, err := io.Copy(enc, in); err != nil {
		enc.Close()
		out.Close()

		return fmt.Errorf("zstd %s: %w", dst, err)
	}

	if err := enc.Close(); err != nil {
		out.Close()
		return fmt.Errorf("zstd %s: %w", dst, err)
	}

	if err := out.Close(); err != nil {
		return err
	}

	return os.Rename(tmp, dst)
}

// ExpandImage writes the disk image src (raw, or zstd when its name ends
// in .zst) to dst, a new file, leaving its zero blocks as holes: a node's
// sparse disk costs the host what the image holds, not its size. An image
// larger than limit bytes (0: no limit) is refused as soon as it is seen
// to be, with ErrImageTooLarge.
func ExpandImage(src, dst string, limit int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()

	var r io.Reader = in

	if strings.HasSuffix(src, ".zst") {
		dec, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		defer dec.Close()

		r = dec
	}

	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}

	if limit > 0 {
		r = io.LimitReader(r, limit+1) // a byte past the limit is enough to tell
	}

	n, err := copySparse(out, r)
	if err == nil && limit > 0 && n > limit {
		err = ErrImageTooLarge
	}

	if err != nil {
		out.Close()
		os.Remove(dst)

		return fmt.Errorf("expand %s: %w", src, err)
	}

	return out.Close()
}

// sparseBlock is the granularity copySparse finds holes at.
const sparseBlock = 64 << 10

// copySparse copies r to the start of w, seeking over blocks of zeros
// instead of writing them, and sets w's size to what r held.
func copySparse(w *os.File, r io.Reader) (int64, error) {
	buf := make([]byte, sparseBlock)

	var off int64

	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if !allZero(buf[:n]) {
				if _, werr := w.WriteAt(buf[:n], off); werr != nil {
					return off, werr
				}
			}

			off += int64(n)
		}

		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return off, w.Truncate(off)
		}

		if err != nil {
			return off, err
		}
	}
}

var zeroBlock = make([]byte, sparseBlock)

func allZero(b []byte) bool { return bytes.Equal(b, zeroBlock[:len(b)]) }

// ErrImageTooLarge is ExpandImage's answer for an image over its limit.
var ErrImageTooLarge = errors.New("the disk image is larger than the disk")
