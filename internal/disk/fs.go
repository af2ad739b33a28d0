package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/ext4"
)

// Region is a byte range of a disk, image file or partition device: a
// partition device is its own region at offset 0.
type Region struct {
	File   *os.File
	Offset int64
	Size   int64
}

// Filesystem signatures Probe knows. Only ext4 is made here; the others
// are recognised so that a wipe or a format never mistakes them for
// empty space.
const (
	ProbeExt4 = "ext4" // ext2, ext3 or ext4: one superblock magic
	ProbeXFS  = "xfs"
	ProbeVFAT = "vfat"
	ProbeLUKS = "luks"
)

// Probe names the filesystem (or LUKS header) at the start of r, or
// returns "" when it finds none.
func Probe(r Region) (string, error) {
	v, err := ProbeVolume(r)

	return v.Name, err
}

// More of what ProbeVolume recognises (Talos's discovered volume names).
const (
	ProbeGPT       = "gpt"
	ProbeSquashFS  = "squashfs"
	ProbeTalosMeta = "talosmeta"
	ProbeISO9660   = "iso9660"
)

// iso9660PVD is where an ISO 9660 filesystem's primary volume descriptor
// is: sector 16 of 2048 bytes. Its type (1) and "CD001" open it, and the
// volume identifier is 32 bytes at 40.
const iso9660PVD = 16 * 2048

// Volume is what a probe finds at the start of a region: the format's
// name ("" for none) and, where the format has them, its UUID and label.
type Volume struct {
	Name, UUID, Label string
}

// ProbeVolume reads the signatures at the start of r: LUKS, xfs, ext2-4,
// vfat, squashfs, a GPT (on a whole disk) and Talos's META.
func ProbeVolume(r Region) (Volume, error) {
	buf := make([]byte, 4096)

	n, err := r.File.ReadAt(buf, r.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return Volume{}, fmt.Errorf("probe %s: %w", r.File.Name(), err)
	}

	buf = buf[:n]

	at := func(off int, magic []byte) bool {
		return len(buf) >= off+len(magic) && bytes.Equal(buf[off:off+len(magic)], magic)
	}

	// text is a fixed-size, NUL- or space-padded field.
	text := func(off, size int) string {
		return string(bytes.TrimRight(bytes.TrimRight(buf[off:off+size], "\x00"), " "))
	}

	switch {
	case at(0, []byte("LUKS\xba\xbe")):
		// LUKS2 binary header: label at 24 (48 bytes), uuid at 168 (40).
		return Volume{Name: ProbeLUKS, Label: text(24, 48), UUID: text(168, 40)}, nil
	case at(0, []byte("XFSB")):
		return Volume{Name: ProbeXFS, UUID: uuidString(buf[32:48]), Label: text(108, 12)}, nil
	case len(buf) >= 1082 && binary.LittleEndian.Uint16(buf[1080:1082]) == 0xEF53:
		// s_magic, 56 bytes into the superblock at 1024; s_uuid at 0x68,
		// s_volume_name at 0x78.
		return Volume{Name: ProbeExt4, UUID: uuidString(buf[1024+0x68 : 1024+0x78]), Label: text(1024+0x78, 16)}, nil
	case at(510, []byte{0x55, 0xAA}) && at(82, []byte("FAT32")):
		return Volume{Name: ProbeVFAT, UUID: fatSerial(buf[67:71]), Label: text(71, 11)}, nil
	case at(510, []byte{0x55, 0xAA}) && at(54, []byte("FAT")):
		return Volume{Name: ProbeVFAT, UUID: fatSerial(buf[39:43]), Label: text(43, 11)}, nil
	case at(0, []byte("hsqs")):
		return Volume{Name: ProbeSquashFS}, nil
	case at(512, []byte("EFI PART")):
		// The GPT header in LBA 1; its disk GUID is mixed-endian at 56.
		return Volume{Name: ProbeGPT, UUID: guidString(buf[512+56 : 512+72])}, nil
	case len(buf) >= 4 && binary.BigEndian.Uint32(buf) == 0x5a4b3c2d:
		return Volume{Name: ProbeTalosMeta}, nil
	}

	// An ISO (a NoCloud seed, an installer CD) has nothing in its first
	// 32 KiB that says so, unless it is hybrid (then the GPT above won).
	if r.Size == 0 || r.Size >= iso9660PVD+2048 {
		pvd := make([]byte, 72)
		if _, err := r.File.ReadAt(pvd, r.Offset+iso9660PVD); err == nil && pvd[0] == 1 && string(pvd[1:6]) == "CD001" {
			return Volume{Name: ProbeISO9660, Label: strings.TrimRight(string(pvd[40:72]), " \x00")}, nil
		}
	}

	return Volume{}, nil
}

func uuidString(b []byte) string {
	if bytes.Equal(b, make([]byte, len(b))) {
		return ""
	}

	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// guidString is a GPT GUID: the first three fields little-endian.
func guidString(b []byte) string {
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x", binary.LittleEndian.Uint32(b[0:4]), binary.LittleEndian.Uint16(b[4:6]),
		binary.LittleEndian.Uint16(b[6:8]), b[8:10], b[10:16])
}

// fatSerial is a FAT volume serial as blkid prints it: "ABCD-1234".
func fatSerial(b []byte) string {
	v := binary.LittleEndian.Uint32(b)

	return fmt.Sprintf("%04X-%04X", v>>16, v&0xffff)
}

// FormatExt4 makes an empty ext4 filesystem labelled label on r, with a
// journal. Whatever was there is gone.
func FormatExt4(r Region, label string) error {
	// Sizes must be whole 4 KiB blocks for the layout go-diskfs picks on
	// anything over 512 MiB (1 KiB below that).
	size := r.Size &^ 4095

	params := &ext4.Params{
		VolumeName: label,
		InodeCount: ext4InodeCount(size),
	}

	if _, err := ext4.Create(file.New(r.File, false), size, r.Offset, SectorSize, params); err != nil {
		return fmt.Errorf("format %s (%s) as ext4: %w", label, r.File.Name(), err)
	}

	if err := r.File.Sync(); err != nil {
		return fmt.Errorf("format %s (%s) as ext4: %w", label, r.File.Name(), err)
	}

	return nil
}

// ext4 geometry as go-diskfs picks it by default: 1 KiB blocks under 512
// MiB, 4 KiB from there, 8 blocks per group per byte of block, 256-byte
// inodes.
const (
	ext4SmallFS   = 512 * MiB
	ext4InodeSize = 256
	// ext4InodeRatio is mke2fs's default bytes per inode: go-diskfs's own
	// (8 KiB) doubles the inode tables it zeroes, which costs seconds
	// under emulation for a few GiB.
	ext4InodeRatio = 16384
)

// ext4InodeCount is the inode count for a filesystem of size bytes: one
// per ext4InodeRatio bytes, rounded so that each group's inodes fill
// whole inode table blocks. go-diskfs only rounds to multiples of 8 per
// group, and the kernel, which counts whole blocks, then finds the inode
// table of group 0 one block too long ("Something is wrong with group
// 0") when it initialises it.
func ext4InodeCount(size int64) uint32 {
	block := int64(4096)
	if size < ext4SmallFS {
		block = 1024
	}

	perGroup := min(block*8, 65528) // blocks
	groups := (size/block + perGroup - 1) / perGroup
	perBlock := block / ext4InodeSize

	inodes := size / ext4InodeRatio
	ipg := (inodes + groups - 1) / groups
	ipg = (ipg + perBlock - 1) / perBlock * perBlock

	return uint32(ipg * groups)
}

// wipeSpan is how much Wipe zeroes at each end of a region: every
// signature Probe (and blkid) looks for is in the first MiB, and the
// last MiB holds the trailing headers some formats keep (md 1.0
// superblocks, a backup GPT when the region is a whole disk).
const wipeSpan = MiB

// Wipe zeroes the first and last MiB of r, which removes its filesystem
// or LUKS signature: the next boot sees an empty partition and formats
// it. The data itself is not erased.
func Wipe(r Region) error {
	zero := make([]byte, min(wipeSpan, r.Size))

	ends := []int64{r.Offset}
	if r.Size > wipeSpan {
		ends = append(ends, r.Offset+r.Size-int64(len(zero)))
	}

	for _, off := range ends {
		if _, err := r.File.WriteAt(zero, off); err != nil {
			return fmt.Errorf("wipe %s: %w", r.File.Name(), err)
		}
	}

	if err := r.File.Sync(); err != nil {
		return fmt.Errorf("wipe %s: %w", r.File.Name(), err)
	}

	return nil
}
