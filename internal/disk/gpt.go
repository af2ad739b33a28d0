package disk

import (
	"fmt"
	"os"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/partition/gpt"
)

// WriteTable writes a new GPT for plan on f, a disk or image file of
// size bytes: protective MBR, primary and backup headers and arrays. The
// old table, if any, is replaced; partition contents are not touched.
// The disk's and the partitions' GUIDs are random.
func WriteTable(f *os.File, size int64, plan []Extent) error {
	return WriteTableGUID(f, size, plan, "")
}

// WriteTableGUID is WriteTable with the disk's GUID diskGUID and each
// partition's Extent.GUID, where they are set, so that a disk image is
// the same bytes every time it is made.
func WriteTableGUID(f *os.File, size int64, plan []Extent, diskGUID string) error {
	parts := make([]*gpt.Partition, len(plan))

	for i, e := range plan {
		parts[i] = &gpt.Partition{
			// go-diskfs writes each entry at its Index; left at zero,
			// every partition would land in the same slot.
			Index: e.Index,
			Start: e.Start,
			End:   e.End,
			Type:  gpt.Type(e.Type),
			Name:  e.Label,
			GUID:  e.GUID,
		}
	}

	table := &gpt.Table{
		GUID:               diskGUID,
		Partitions:         parts,
		LogicalSectorSize:  SectorSize,
		PhysicalSectorSize: SectorSize,
		ProtectiveMBR:      true,
	}

	w, err := file.New(f, false).Writable()
	if err != nil {
		return fmt.Errorf("write partition table on %s: %w", f.Name(), err)
	}

	if err := table.Write(w, size); err != nil {
		return fmt.Errorf("write partition table on %s: %w", f.Name(), err)
	}

	if err := f.Sync(); err != nil {
		return fmt.Errorf("write partition table on %s: %w", f.Name(), err)
	}

	return nil
}

// TablePartition is a partition as a GPT on disk describes it.
type TablePartition struct {
	Index      int
	Label      string
	Type       string // upper-case type GUID
	Start, End uint64 // sectors, inclusive
}

// ReadTable reads the GPT of f (a disk or image file).
func ReadTable(f *os.File) ([]TablePartition, error) {
	table, err := gpt.Read(file.New(f, true), SectorSize, SectorSize)
	if err != nil {
		return nil, fmt.Errorf("read partition table of %s: %w", f.Name(), err)
	}

	var out []TablePartition

	for _, p := range table.Partitions {
		if p.Type == gpt.Unused {
			continue
		}

		out = append(out, TablePartition{Index: p.Index, Label: p.Name, Type: strings.ToUpper(string(p.Type)), Start: p.Start, End: p.End})
	}

	return out, nil
}
