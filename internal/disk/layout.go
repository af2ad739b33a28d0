package disk

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
)

// MiB is a mebibyte; partitions are sized and aligned in them.
const MiB = 1 << 20

// Partition labels (GPT partition names), as Talos names them.
const (
	LabelEFI       = "EFI"
	LabelBIOS      = "BIOS"
	LabelBoot      = "BOOT"
	LabelMeta      = "META"
	LabelState     = "STATE"
	LabelEphemeral = "EPHEMERAL"
)

// GPT partition type GUIDs of the layout.
const (
	TypeEFISystem = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
	TypeBIOSBoot  = "21686148-6449-6E6F-744E-656564454649"
	TypeLinuxData = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
)

// Filesystems a partition is formatted with; "" leaves it unformatted.
const (
	FSNone = ""
	FSExt4 = "ext4"
)

// PartitionSpec is one partition of a layout.
type PartitionSpec struct {
	Label string
	Type  string // GPT type GUID
	// Size in bytes, a multiple of MiB; 0 takes the rest of the disk
	// (only the last partition may).
	Size uint64
	// MinSize is what the rest-of-disk partition needs at least.
	MinSize uint64
	// FS is what the partition is formatted with when it is made.
	FS string
}

// SystemLayout is Talos's system disk (GRUB flavour, sizes from
// pkg/machinery/imager/quirks/partitions.go): it needs a disk of about
// 4.2 GiB.
var SystemLayout = []PartitionSpec{
	{Label: LabelEFI, Type: TypeEFISystem, Size: 100 * MiB},
	{Label: LabelBIOS, Type: TypeBIOSBoot, Size: 1 * MiB},
	{Label: LabelBoot, Type: TypeLinuxData, Size: 2000 * MiB},
	{Label: LabelMeta, Type: TypeLinuxData, Size: 1 * MiB},
	{Label: LabelState, Type: TypeLinuxData, Size: 100 * MiB, FS: FSExt4},
	{Label: LabelEphemeral, Type: TypeLinuxData, MinSize: 2048 * MiB, FS: FSExt4},
}

// SectorSize is the logical sector size of the disks this package writes;
// 4Kn disks are refused when the table is written.
const SectorSize = 512

// gptReserved is what the backup GPT takes at the end of the disk: the
// 128-entry partition array (32 sectors) and the header.
const gptReserved = 33

// Extent is a planned partition: its spec, its GPT index (from 1) and its
// sectors, first and last inclusive.
type Extent struct {
	PartitionSpec
	Index      int
	Start, End uint64
	// GUID is the partition's unique GUID; empty is a random one.
	GUID string
}

// Offset is where the partition starts, in bytes.
func (e Extent) Offset() int64 { return int64(e.Start * SectorSize) }

// Bytes is the partition's size.
func (e Extent) Bytes() int64 { return int64((e.End - e.Start + 1) * SectorSize) }

// Plan places layout on a disk of diskSize bytes: each partition starts
// on a MiB boundary (2048 sectors, as sgdisk and Talos align), in order,
// and the last one with Size 0 takes what is left, rounded down to whole
// MiBs. It fails when the disk is too small.
func Plan(layout []PartitionSpec, diskSize int64) ([]Extent, error) {
	if len(layout) == 0 {
		return nil, fmt.Errorf("plan partitions: empty layout")
	}

	const align = MiB / SectorSize

	sectors := uint64(diskSize) / SectorSize
	if sectors < 2*align+gptReserved {
		return nil, fmt.Errorf("plan partitions: disk of %d bytes is too small", diskSize)
	}

	lastUsable := sectors - gptReserved - 1
	// The rest-of-disk partition ends on the last whole MiB before the
	// backup GPT.
	restEnd := (lastUsable+1)/align*align - 1

	out := make([]Extent, 0, len(layout))
	next := uint64(align)

	for i, spec := range layout {
		if err := spec.check(i == len(layout)-1); err != nil {
			return nil, fmt.Errorf("plan partitions: %w", err)
		}

		e := Extent{PartitionSpec: spec, Index: i + 1, Start: next}

		if spec.Size == 0 {
			if restEnd < next || (restEnd-next+1)*SectorSize < spec.MinSize {
				return nil, tooSmall(layout, diskSize)
			}

			e.End = restEnd
		} else {
			e.End = next + spec.Size/SectorSize - 1
			if e.End > lastUsable {
				return nil, tooSmall(layout, diskSize)
			}
		}

		out = append(out, e)
		next = (e.End + 1 + align - 1) / align * align
	}

	return out, nil
}

func (s PartitionSpec) check(last bool) error {
	switch {
	case s.Label == "" || len([]rune(s.Label)) > 36:
		return fmt.Errorf("partition label %q: must be 1 to 36 characters (a GPT name)", s.Label)
	case s.Size%MiB != 0:
		return fmt.Errorf("partition %s: size %d is not a whole number of MiB", s.Label, s.Size)
	case s.Size == 0 && !last:
		return fmt.Errorf("partition %s: only the last partition may take the rest of the disk", s.Label)
	case s.FS != FSNone && s.FS != FSExt4:
		return fmt.Errorf("partition %s: unsupported filesystem %q", s.Label, s.FS)
	}

	return nil
}

// MinDiskSize is the smallest disk layout fits on.
func MinDiskSize(layout []PartitionSpec) int64 {
	total := uint64(MiB) // alignment before the first partition

	for _, s := range layout {
		total += max(s.Size, s.MinSize)
	}

	return int64(total + MiB) // the backup GPT, rounded up to a MiB
}

func tooSmall(layout []PartitionSpec, diskSize int64) error {
	labels := make([]string, len(layout))
	for i, s := range layout {
		labels[i] = s.Label
	}

	return fmt.Errorf("plan partitions: the disk (%s) is too small for %s: it needs at least %s",
		humanize.IBytes(uint64(diskSize)), strings.Join(labels, ", "), humanize.IBytes(uint64(MinDiskSize(layout))))
}
