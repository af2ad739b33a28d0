//go:build e2e

package guesttest

// The guest side of the dm-crypt check (runs inside QEMU): a LUKS2
// volume formatted with internal/luks2 on a brd ramdisk, mapped by
// internal/dm through the device-mapper ioctls, and checked from both
// sides of the mapping.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/dm"
	"github.com/talosbox/talosbox/internal/luks2"
)

const (
	// cryptDisk is the ramdisk brd makes (rd_nr=1); the guest has no
	// loop devices and the check needs no disk image on the host.
	cryptDisk = "/dev/ram0"
	cryptName = "talosbox-crypt"
	// cryptPatternAt is where the pattern goes in the mapping, past the
	// first MiB and not sector 0, so IV numbering is exercised.
	cryptPatternAt  = 1<<20 + 3*4096
	cryptPatternLen = 256 << 10
)

var cryptPass = []byte("correct horse battery staple")

// runDMCrypt: for 512- and 4096-byte sectors, format, open, write a
// pattern through the mapping, close, check the raw device holds the
// pattern encrypted (and not in the clear), reopen and read it back;
// then a wrong passphrase and busy removals.
func (g *guest) runDMCrypt(ctx context.Context) (string, error) {
	if err := waitFor(ctx, cryptDisk, func() (bool, error) {
		_, err := os.Stat(cryptDisk)
		return err == nil, err
	}); err != nil {
		return "", err
	}

	v, err := dm.Version()
	if err != nil {
		return "", err
	}

	report := []string{fmt.Sprintf("dm ioctl %d.%d.%d", v[0], v[1], v[2])}

	for _, ss := range []int{512, 4096} {
		r, err := g.cryptRound(ss)
		if err != nil {
			return "", fmt.Errorf("sector size %d: %w", ss, err)
		}

		report = append(report, r)
	}

	r, err := g.cryptRefusals(ctx)
	if err != nil {
		return "", err
	}

	tp, err := cryptThroughput()
	if err != nil {
		return "", err
	}

	return strings.Join(append(report, r, tp), "; "), nil
}

func (g *guest) cryptRound(ss int) (string, error) {
	vk, seg, err := formatCryptDisk(ss)
	if err != nil {
		return "", err
	}
	defer clear(vk)

	g.phase("luks2-formatted sector=%d offset=%d", ss, seg.Offset)

	start := time.Now()

	path, err := dm.OpenLUKS2(cryptDisk, cryptName, cryptPass)
	if err != nil {
		return "", err
	}

	opened := time.Since(start)

	wantLen := (64<<20 - seg.Offset) / dm.Sector
	if err := checkCryptStatus(0, wantLen); err != nil {
		return "", err
	}

	table, err := dm.Table(cryptName)
	if err != nil {
		return "", err
	}

	var st unix.Stat_t
	if err := unix.Stat(cryptDisk, &st); err != nil {
		return "", err
	}

	// The key masked, the device by number, the offset in sectors.
	line := table[0].Params
	wantTable := fmt.Sprintf("aes-xts-plain64 %s 0 %d:%d %d",
		strings.Repeat("0", 2*len(vk)), unix.Major(st.Rdev), unix.Minor(st.Rdev), seg.Offset/dm.Sector)
	if ss != dm.Sector {
		wantTable += fmt.Sprintf(" 1 sector_size:%d", ss)
	}

	if line != wantTable {
		return "", fmt.Errorf("table line %q, want %q", line, wantTable)
	}

	pattern := make([]byte, cryptPatternLen)
	for i := range pattern {
		pattern[i] = byte(i*131 + i>>9 + ss)
	}

	if err := writeThrough(path, pattern); err != nil {
		return "", err
	}

	if err := dm.CloseLUKS2(cryptName); err != nil {
		return "", err
	}

	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s after close: %v", path, err)
	}

	// The raw device holds ciphertext that luks2's own XTS turns back
	// into the pattern: dm-crypt and internal/luks2 agree on the cipher,
	// the IVs (512-byte units plus iv_tweak) and the data offset.
	raw, err := readDirect(cryptDisk, int64(seg.Offset)+cryptPatternAt, cryptPatternLen)
	if err != nil {
		return "", err
	}

	if bytes.Equal(raw, pattern) || bytes.Contains(raw, pattern[:4096]) {
		return "", errors.New("the raw device holds the plaintext")
	}

	sc, err := sectorCipher(vk)
	if err != nil {
		return "", err
	}

	plain := make([]byte, len(raw))
	if err := sc.Decrypt(plain, raw, cryptPatternAt); err != nil {
		return "", err
	}

	if !bytes.Equal(plain, pattern) {
		return "", fmt.Errorf("the raw device decrypts to something else at byte %d", firstDiff(plain, pattern))
	}

	// Reopened, the mapping reads the pattern back.
	if path, err = dm.OpenLUKS2(cryptDisk, cryptName, cryptPass); err != nil {
		return "", fmt.Errorf("reopen: %w", err)
	}

	back, err := readDirect(path, cryptPatternAt, cryptPatternLen)
	if err != nil {
		return "", err
	}

	if !bytes.Equal(back, pattern) {
		return "", fmt.Errorf("reopened mapping reads back something else at byte %d", firstDiff(back, pattern))
	}

	if err := dm.CloseLUKS2(cryptName); err != nil {
		return "", err
	}

	return fmt.Sprintf("sector %d: opened in %v, %d KiB round trip, ciphertext decrypts with luks2.SectorCipher", ss, opened.Round(time.Millisecond), cryptPatternLen>>10), nil
}

// formatCryptDisk formats the ramdisk with small KDF costs: the check
// is about the mapping, not the KDF's strength.
func formatCryptDisk(ss int) ([]byte, luks2.SegmentInfo, error) {
	f, err := os.OpenFile(cryptDisk, os.O_RDWR, 0)
	if err != nil {
		return nil, luks2.SegmentInfo{}, err
	}
	defer f.Close()

	vk, err := luks2.Format(f, nil, cryptPass, luks2.FormatOptions{
		SectorSize: ss, DigestIterations: 1000,
		PBKDF: luks2.PBKDF{Type: luks2.KDFArgon2id, Iterations: 4, Memory: 1 << 10, Parallel: 1},
	})
	if err != nil {
		return nil, luks2.SegmentInfo{}, err
	}

	if err := f.Sync(); err != nil {
		clear(vk)
		return nil, luks2.SegmentInfo{}, err
	}

	h, err := luks2.ReadHeader(f)
	if err != nil {
		clear(vk)
		return nil, luks2.SegmentInfo{}, err
	}

	seg, err := h.Segment()

	return vk, seg, err
}

// checkCryptStatus: one crypt target of length sectors, live, opened
// open times.
func checkCryptStatus(open int, length uint64) error {
	info, err := dm.Status(cryptName)
	if err != nil {
		return err
	}

	if info.OpenCount != open || info.TargetCount != 1 || len(info.Targets) != 1 || info.Targets[0].Type != "crypt" ||
		info.Targets[0].Length != length || !info.ActiveTable || info.Suspended || !strings.HasPrefix(info.UUID, "CRYPT-LUKS2-") {
		return fmt.Errorf("status %+v, want one live crypt target of %d sectors opened %d times", info, length, open)
	}

	return nil
}

// writeThrough writes the pattern through the mapping and checks the
// kernel counts the open while the file is held.
func writeThrough(path string, pattern []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()

	info, err := dm.Status(cryptName)
	if err != nil {
		return err
	}

	if err := checkCryptStatus(1, info.Targets[0].Length); err != nil {
		return fmt.Errorf("while open: %w", err)
	}

	if _, err := f.WriteAt(pattern, cryptPatternAt); err != nil {
		return err
	}

	return f.Sync()
}

// readDirect reads with O_DIRECT, so the bytes come from the device and
// not from a page cache filled before the other side wrote.
func readDirect(path string, off int64, n int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	// O_DIRECT wants an aligned buffer: an anonymous mapping is.
	buf, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(buf)

	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("read %s at %d: %w", path, off, err)
	}

	return bytes.Clone(buf), nil
}

// cryptRefusals: a wrong passphrase maps nothing; an open mapping is
// not removed (ErrBusy after the timeout) unless deferred, and then goes
// at its last close.
func (g *guest) cryptRefusals(ctx context.Context) (string, error) {
	if _, err := dm.OpenLUKS2(cryptDisk, cryptName, []byte("wrong")); !errors.Is(err, luks2.ErrWrongKey) {
		return "", fmt.Errorf("wrong passphrase: %v", err)
	}

	if devs, err := dm.List(); err != nil || len(devs) != 0 {
		return "", fmt.Errorf("after a wrong passphrase: mappings %+v, %v", devs, err)
	}

	path, err := dm.OpenLUKS2(cryptDisk, cryptName, cryptPass)
	if err != nil {
		return "", err
	}

	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()

	start := time.Now()

	err = dm.Remove(cryptName, dm.WithTimeout(500*time.Millisecond))
	if !errors.Is(err, dm.ErrBusy) {
		return "", fmt.Errorf("remove while open: %v", err)
	}

	busy := time.Since(start)

	if err := dm.Remove(cryptName, dm.Deferred()); err != nil {
		return "", err
	}

	info, err := dm.Status(cryptName)
	if err != nil || !info.DeferredRemove || info.OpenCount != 1 {
		return "", fmt.Errorf("after a deferred remove: %+v, %v", info, err)
	}

	f.Close()

	// The kernel removes a deferred mapping from a workqueue after the
	// last close.
	if err := waitFor(ctx, cryptName+" to go at its last close", func() (bool, error) {
		_, err := dm.Status(cryptName)
		return errors.Is(err, dm.ErrNotFound), err
	}); err != nil {
		return "", err
	}

	return fmt.Sprintf("wrong passphrase maps nothing; open mapping refused removal (%v, ErrBusy), deferred removal done at last close", busy.Round(time.Millisecond)), nil
}

// sectorCipher is luks2's own dm-crypt equivalent for the volume.
func sectorCipher(vk []byte) (*luks2.SectorCipher, error) {
	f, err := os.Open(cryptDisk)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	h, err := luks2.ReadHeader(f)
	if err != nil {
		return nil, err
	}

	return h.SectorCipher(vk)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}

	return min(len(a), len(b))
}
