package disk

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"unsafe"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"golang.org/x/sys/unix"
)

// Free is a disk's room for one more partition: the largest run of
// unpartitioned sectors, MiB-aligned (Start and End inclusive), and
// whether the disk has a partition table yet.
type Free struct {
	Start, End uint64
	HasTable   bool
}

// Bytes is the room's size.
func (f Free) Bytes() uint64 {
	if f.End < f.Start {
		return 0
	}

	return (f.End - f.Start + 1) * SectorSize
}

// ErrNotPartitionable is a disk that holds something other than a GPT (a
// filesystem on the whole disk, an MBR): a partition is never added to it.
var ErrNotPartitionable = errors.New("holds no GPT")

// FreeSpace finds the room on the disk at path for another partition: on
// a blank disk, everything between the tables; on a GPT disk, the largest
// gap between (or after) its partitions.
func FreeSpace(path string) (Free, error) {
	f, err := os.Open(path)
	if err != nil {
		return Free{}, fmt.Errorf("free space of %s: %w", path, err)
	}
	defer f.Close()

	return freeSpace(f)
}

func freeSpace(f *os.File) (Free, error) {
	size, err := Size(f)
	if err != nil {
		return Free{}, fmt.Errorf("free space of %s: %w", f.Name(), err)
	}

	found, err := Probe(Region{File: f, Size: size})
	if err != nil {
		return Free{}, fmt.Errorf("free space of %s: %w", f.Name(), err)
	}

	var used []TablePartition

	switch found {
	case "":
	case ProbeGPT:
		if used, err = ReadTable(f); err != nil {
			return Free{}, err
		}
	default:
		return Free{}, fmt.Errorf("%s %w: it holds %s", f.Name(), ErrNotPartitionable, found)
	}

	const align = MiB / SectorSize

	sectors := uint64(size) / SectorSize
	if sectors < 2*gptReserved+2*align {
		return Free{}, fmt.Errorf("%s is too small for a partition table", f.Name())
	}

	// Usable sectors: after the primary table, before the backup one.
	first, last := uint64(2+32), sectors-gptReserved-1

	slices.SortFunc(used, func(a, b TablePartition) int { return int(a.Start) - int(b.Start) })

	best := Free{HasTable: found == ProbeGPT}
	next := first
	have := false

	consider := func(from, to uint64) {
		from = (from + align - 1) / align * align
		end := (to+1)/align*align - 1 // the last whole MiB

		if end > from && (!have || end-from > best.End-best.Start) {
			best.Start, best.End, have = from, end, true
		}
	}

	for _, p := range used {
		if p.Start > next {
			consider(next, p.Start-1)
		}

		next = max(next, p.End+1)
	}

	if next <= last {
		consider(next, last)
	}

	if !have {
		best.Start, best.End = 1, 0 // no room: Bytes is 0
	}

	return best, nil
}

// AddPartition adds a partition labelled label, of type typ, of size
// bytes (whole MiBs, down) in the room FreeSpace finds on the disk at
// path: a blank disk gets a GPT. The partition's first and last MiB are
// zeroed first, so nothing of the disk's past is found in it; the kernel
// learns of it alone (BLKPG), so the disk's other partitions may be in
// use. It returns the partition as the table says.
func AddPartition(path, label, typ string, size uint64) (Extent, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return Extent{}, fmt.Errorf("add partition %s to %s: %w", label, path, err)
	}
	defer f.Close()

	room, err := freeSpace(f)
	if err != nil {
		return Extent{}, err
	}

	size = size / MiB * MiB
	if size == 0 || size > room.Bytes() {
		return Extent{}, fmt.Errorf("add partition %s to %s: %d bytes do not fit in the %d free", label, path, size, room.Bytes())
	}

	diskSize, err := Size(f)
	if err != nil {
		return Extent{}, err
	}

	table := &gpt.Table{LogicalSectorSize: SectorSize, PhysicalSectorSize: SectorSize, ProtectiveMBR: true}

	if room.HasTable {
		if table, err = gpt.Read(file.New(f, true), SectorSize, SectorSize); err != nil {
			return Extent{}, fmt.Errorf("add partition %s to %s: %w", label, path, err)
		}
	}

	index := 1
	for slices.ContainsFunc(table.Partitions, func(p *gpt.Partition) bool { return p.Index == index && p.Type != gpt.Unused }) {
		index++
	}

	e := Extent{PartitionSpec: PartitionSpec{Label: label, Type: typ, Size: size}, Index: index, Start: room.Start, End: room.Start + size/SectorSize - 1}

	// Nothing of an older filesystem may be found in the new partition.
	for _, off := range []int64{e.Offset(), e.Offset() + e.Bytes() - MiB} {
		if _, err := f.WriteAt(make([]byte, MiB), off); err != nil {
			return Extent{}, fmt.Errorf("add partition %s to %s: %w", label, path, err)
		}
	}

	table.Partitions = slices.DeleteFunc(table.Partitions, func(p *gpt.Partition) bool { return p.Type == gpt.Unused })
	table.Partitions = append(table.Partitions, &gpt.Partition{Index: index, Start: e.Start, End: e.End, Type: gpt.Type(typ), Name: label})

	w, err := file.New(f, false).Writable()
	if err != nil {
		return Extent{}, fmt.Errorf("add partition %s to %s: %w", label, path, err)
	}

	if err := table.Write(w, diskSize); err != nil {
		return Extent{}, fmt.Errorf("add partition %s to %s: %w", label, path, err)
	}

	if err := f.Sync(); err != nil {
		return Extent{}, fmt.Errorf("add partition %s to %s: %w", label, path, err)
	}

	if isBlockDevice(f) {
		if err := blkpgAdd(f, e); err != nil {
			return Extent{}, fmt.Errorf("add partition %s to %s: %w", label, path, err)
		}
	}

	return e, nil
}

// blkpgAdd tells the kernel of one new partition, leaving the others (and
// whoever uses them) alone.
func blkpgAdd(f *os.File, e Extent) error {
	p := unix.BlkpgPartition{Start: e.Offset(), Length: e.Bytes(), Pno: int32(e.Index)}
	arg := unix.BlkpgIoctlArg{Op: unix.BLKPG_ADD_PARTITION, Datalen: int32(unsafe.Sizeof(p)), Data: (*byte)(unsafe.Pointer(&p))}

	const blkpg = 0x1269 // _IO(0x12, 105)

	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), blkpg, uintptr(unsafe.Pointer(&arg))); errno != 0 {
		return fmt.Errorf("BLKPG add partition %d: %w", e.Index, errno)
	}

	return nil
}
