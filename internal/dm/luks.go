package dm

// LUKS2 volumes: unlock with internal/luks2, map with dm-crypt, as
// `cryptsetup open --type luks2` does.

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/luks2"
)

// luksUUIDPrefix starts the dm uuid of a LUKS2 mapping, as cryptsetup
// names it (CRYPT-LUKS2-<uuid without dashes>-<name>), so tools that
// recognise cryptsetup's mappings recognise these.
const luksUUIDPrefix = "CRYPT-LUKS2-"

// OpenLUKS2 unlocks the LUKS2 volume on the block device devPath with
// passphrase and maps its data segment at /dev/mapper/<name> through
// dm-crypt, returning that path. The volume key lives only in buffers
// zeroed before OpenLUKS2 returns. A wrong passphrase fails with an
// error matching luks2.ErrWrongKey and leaves no mapping behind.
//
// Activation flags a header may store (config.flags: allow-discards,
// no-read-workqueue, ...) are not read by internal/luks2 and so not
// applied; the mapping uses dm-crypt's defaults.
func OpenLUKS2(devPath, name string, passphrase []byte) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}

	f, _, err := openBlock(devPath, name)
	if err != nil {
		return "", err
	}

	vk, _, err := luks2.Unlock(f, passphrase)
	f.Close()

	if err != nil {
		return "", fmt.Errorf("dm: open LUKS2 %q on %s: %w", name, devPath, err)
	}
	defer clear(vk)

	return MapLUKS2(devPath, name, vk)
}

// MapLUKS2 maps the data segment of the LUKS2 volume on the block device
// devPath at /dev/mapper/<name> with a volume key the caller unlocked
// (luks2.Unlock), so that a caller that also syncs key slots with that key
// runs the KDF once. The key is only read; the caller zeroes it. options
// are dm-crypt's optional parameters (no_read_workqueue, allow_discards).
func MapLUKS2(devPath, name string, volumeKey []byte, options ...string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}

	f, st, err := openBlock(devPath, name)
	if err != nil {
		return "", err
	}
	defer f.Close()

	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", fmt.Errorf("dm: open LUKS2 %q: size of %s: %w", name, devPath, err)
	}

	h, err := luks2.ReadHeader(f)
	if err != nil {
		return "", fmt.Errorf("dm: open LUKS2 %q on %s: %w", name, devPath, err)
	}

	seg, err := h.Segment()
	if err != nil {
		return "", fmt.Errorf("dm: open LUKS2 %q on %s: %w", name, devPath, err)
	}

	length, err := segmentSectors(seg, uint64(size))
	if err != nil {
		return "", fmt.Errorf("dm: open LUKS2 %q on %s: %w", name, devPath, err)
	}

	dev := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	t := CryptTarget(0, length, seg.Cipher, volumeKey, seg.IVTweak, dev, seg.Offset/Sector, seg.SectorSize, options...)

	d, err := Create(name, luksUUID(h.UUID, name), []Target{t}, 0)
	if err != nil {
		return "", err
	}

	return d.Path, nil
}

// openBlock opens devPath, which must be a block device: dm-crypt maps
// block devices only (an image file would need a loop device), and the
// table names the device by number, which does not depend on /dev.
func openBlock(devPath, name string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t

	f, err := os.Open(devPath)
	if err != nil {
		return nil, st, fmt.Errorf("dm: open LUKS2 %q: %w", name, err)
	}

	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, st, fmt.Errorf("dm: open LUKS2 %q: stat %s: %w", name, devPath, err)
	}

	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		f.Close()
		return nil, st, fmt.Errorf("dm: open LUKS2 %q: %s is not a block device", name, devPath)
	}

	return f, st, nil
}

// segmentSectors is the mapping's length: the segment's size, or for a
// dynamic segment the device after the offset, in whole encryption
// sectors.
func segmentSectors(seg luks2.SegmentInfo, devSize uint64) (uint64, error) {
	ss := uint64(max(seg.SectorSize, Sector))
	if seg.Offset%ss != 0 {
		return 0, fmt.Errorf("data offset %d is not a multiple of the %d-byte sector size", seg.Offset, ss)
	}

	if devSize <= seg.Offset {
		return 0, fmt.Errorf("device of %d bytes ends before the data offset %d", devSize, seg.Offset)
	}

	n := devSize - seg.Offset
	if !seg.Dynamic {
		if seg.Size > n {
			return 0, fmt.Errorf("segment of %d bytes at %d does not fit the %d-byte device", seg.Size, seg.Offset, devSize)
		}

		n = seg.Size
	}

	n -= n % ss
	if n == 0 {
		return 0, fmt.Errorf("no whole %d-byte sector after the data offset %d", ss, seg.Offset)
	}

	return n / Sector, nil
}

func luksUUID(volume, name string) string {
	u := luksUUIDPrefix + strings.ReplaceAll(volume, "-", "") + "-" + name

	return u[:min(len(u), uuidLen-1)]
}

// CloseLUKS2 removes a mapping OpenLUKS2 made (cryptsetup close). It
// refuses a mapping that is not a LUKS2 crypt mapping, so that a wrong
// name cannot take down another kind of device.
func CloseLUKS2(name string, opts ...RemoveOption) error {
	info, err := Status(name)
	if err != nil {
		return err
	}

	if !strings.HasPrefix(info.UUID, luksUUIDPrefix) || len(info.Targets) != 1 || info.Targets[0].Type != "crypt" {
		return fmt.Errorf("dm: close LUKS2 %q: not a LUKS2 crypt mapping (uuid %q, %d targets)", name, info.UUID, len(info.Targets))
	}

	return Remove(name, opts...)
}
