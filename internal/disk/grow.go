package disk

import (
	"fmt"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/partition/gpt"
)

// Growth is what GrowLast did to a table.
type Growth struct {
	// Moved says the backup GPT was moved to the end of the disk.
	Moved bool
	// Label is the last partition; OldEnd and NewEnd are its last sector
	// before and after (equal when it could not grow).
	Label          string
	OldEnd, NewEnd uint64
}

// Grown says whether the last partition got bigger.
func (g Growth) Grown() bool { return g.NewEnd > g.OldEnd }

// GrowLast fits the GPT of path (a disk or an image file) to the disk's
// size: a table written for a smaller disk (a disk image dd'ed onto a
// bigger one, a virtual disk resized) keeps its backup header where the
// image ended, and the space after it is unusable. The backup header and
// array move to the disk's end, and the last partition, when its label is
// label, is extended to the last whole MiB before them, as Plan places a
// rest-of-disk partition. Partition contents are not touched: the caller
// grows only a partition that holds no filesystem yet. The disk's and the
// partitions' GUIDs are kept. A table that already fits is left alone.
func GrowLast(path, label string) (Growth, error) {
	f, err := OpenExclusive(path)
	if err != nil {
		return Growth{}, fmt.Errorf("grow the partition table: %w", err)
	}
	defer f.Close()

	size, err := Size(f)
	if err != nil {
		return Growth{}, fmt.Errorf("grow the partition table: %w", err)
	}

	table, err := gpt.Read(file.New(f, false), SectorSize, SectorSize)
	if err != nil {
		return Growth{}, fmt.Errorf("grow the partition table of %s: %w", path, err)
	}

	sectors := uint64(size) / SectorSize
	if table.TotalSize() >= uint64(size) {
		return Growth{}, nil
	}

	var last *gpt.Partition

	for _, p := range table.Partitions {
		if p.Type != gpt.Unused && (last == nil || p.End > last.End) {
			last = p
		}
	}

	g := Growth{Moved: true}

	if last != nil {
		g.Label, g.OldEnd, g.NewEnd = last.Name, last.End, last.End

		const align = MiB / SectorSize

		lastUsable := sectors - gptReserved - 1
		if end := (lastUsable+1)/align*align - 1; last.Name == label && end > last.End {
			last.End, g.NewEnd = end, end
			last.Size = (last.End - last.Start + 1) * SectorSize
		}
	}

	table.Resize(uint64(size))

	w, err := file.New(f, false).Writable()
	if err != nil {
		return Growth{}, fmt.Errorf("grow the partition table of %s: %w", path, err)
	}

	if err := table.Write(w, size); err != nil {
		return Growth{}, fmt.Errorf("grow the partition table of %s: %w", path, err)
	}

	if err := f.Sync(); err != nil {
		return Growth{}, fmt.Errorf("grow the partition table of %s: %w", path, err)
	}

	if isBlockDevice(f) {
		if err := rereadPartitions(f); err != nil {
			return Growth{}, fmt.Errorf("grow the partition table: %w", err)
		}
	}

	return g, nil
}
