// Package fat writes FAT16 filesystems holding a fixed set of files: the
// EFI system partition an installed node boots from under UEFI, and the
// El Torito EFI image of the ISO. It writes a whole filesystem at once
// and never edits one, which keeps it small and its output a function of
// its inputs alone: the same files, label, serial and time give the same
// bytes, so boot media built twice are identical.
//
// FAT16 rather than FAT32: every UEFI firmware reads both, and mkfs.fat
// itself picks FAT16 for volumes of the sizes written here (a 100 MiB ESP,
// a few MiB of El Torito image). Names are 8.3 and upper case (no long
// file name entries): EFI/BOOT/BOOTX64.EFI is what firmware looks for.
package fat

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SectorSize is the only sector size written.
const SectorSize = 512

const (
	dirEntrySize   = 32
	rootEntries    = 512 // mkfs.fat's default for FAT16
	reservedSecs   = 1
	numFATs        = 2
	mediaFixedDisk = 0xf8

	attrDirectory = 0x10
	attrVolumeID  = 0x08
	attrArchive   = 0x20

	// FAT16's cluster counts: fewer is FAT12, more is FAT32, whatever
	// the BPB says (Microsoft's FAT specification, "FAT type
	// determination").
	minClusters = 4085
	maxClusters = 65524
)

// File is one file of the filesystem, by its path from the root with
// slashes ("EFI/BOOT/BOOTX64.EFI"); the directories on its way are made.
type File struct {
	Path string
	Data []byte
}

// Options label the filesystem.
type Options struct {
	// Label is the volume label (at most 11 characters; "NO NAME" when
	// empty).
	Label string
	// Serial is the volume serial number: mkfs.fat takes the clock's,
	// which is what makes its output differ from run to run.
	Serial uint32
	// ModTime stamps every entry; the zero time is FAT's epoch,
	// 1980-01-01.
	ModTime time.Time
	// HiddenSectors is the volume's first sector on its disk (BPB field
	// 0x1c), for a partition; 0 for an image of its own.
	HiddenSectors uint32
}

// geometry is a planned FAT16 volume.
type geometry struct {
	totalSecs, fatSecs, rootSecs, secsPerCluster, clusters uint32
}

func (g geometry) clusterBytes() int      { return int(g.secsPerCluster) * SectorSize }
func (g geometry) firstFATSector() uint32 { return reservedSecs }
func (g geometry) rootSector() uint32     { return reservedSecs + numFATs*g.fatSecs }
func (g geometry) dataSector() uint32     { return g.rootSector() + g.rootSecs }

// clusterOffset is where cluster c (from 2) starts, in bytes.
func (g geometry) clusterOffset(c uint32) int64 {
	return int64(g.dataSector()+(c-2)*g.secsPerCluster) * SectorSize
}

// plan picks the smallest cluster that keeps the count within FAT16's.
func plan(size int64) (geometry, error) {
	if size%SectorSize != 0 {
		return geometry{}, fmt.Errorf("fat: size %d is not a multiple of %d", size, SectorSize)
	}

	total := size / SectorSize
	if total > 0xffffffff {
		return geometry{}, fmt.Errorf("fat: %d bytes: too large", size)
	}

	g := geometry{totalSecs: uint32(total), rootSecs: rootEntries * dirEntrySize / SectorSize}

	for spc := uint32(1); spc <= 64; spc *= 2 {
		g.secsPerCluster = spc

		// The FAT's size depends on the cluster count, which depends on
		// the FAT's size: a few rounds settle it.
		g.fatSecs = 1
		for range 8 {
			meta := reservedSecs + numFATs*g.fatSecs + g.rootSecs
			if meta >= g.totalSecs {
				return geometry{}, fmt.Errorf("fat: %d bytes hold no data area", size)
			}

			g.clusters = (g.totalSecs - meta) / spc
			g.fatSecs = ((g.clusters+2)*2 + SectorSize - 1) / SectorSize
		}

		if g.clusters < minClusters {
			return geometry{}, fmt.Errorf("fat: %d bytes make %d clusters, fewer than FAT16's %d: at least 2.1 MiB", size, g.clusters, minClusters)
		}

		if g.clusters <= maxClusters {
			return g, nil
		}
	}

	return geometry{}, fmt.Errorf("fat: %d bytes: too large for FAT16 with 32 KiB clusters", size)
}

// node is a directory or a file of the tree being written.
type node struct {
	name     string // 8.3, "NAME    EXT" form
	data     []byte
	dir      bool
	children []*node
	cluster  uint32
	clusters uint32
}

// Render lays out a filesystem of size bytes holding files and returns
// its bytes up to the end of the last cluster it uses: the rest of the
// volume is free space, whose content does not matter, so a caller can
// write the returned bytes over an old filesystem (or compare them with
// it first) without writing the whole region.
func Render(size int64, files []File, o Options) ([]byte, error) {
	g, err := plan(size)
	if err != nil {
		return nil, err
	}

	label, err := volumeLabel(o.Label)
	if err != nil {
		return nil, err
	}

	root := &node{dir: true}
	for _, f := range files {
		if err := root.add(f); err != nil {
			return nil, err
		}
	}

	// Clusters in a fixed order (directories before their contents,
	// names sorted), so that the layout is a function of the files alone.
	next := uint32(2)

	var assign func(n *node, isRoot bool) error

	assign = func(n *node, isRoot bool) error {
		slices.SortFunc(n.children, func(a, b *node) int { return strings.Compare(a.name, b.name) })

		if isRoot {
			if len(n.children)+1 > rootEntries {
				return fmt.Errorf("fat: %d entries in the root directory: at most %d", len(n.children), rootEntries-1)
			}
		} else {
			n.clusters = clustersFor(len(n.children)+2, dirEntrySize, g)
		}

		for _, c := range n.children {
			if !c.dir {
				c.clusters = clustersFor(len(c.data), 1, g)
			}
		}

		for _, c := range append([]*node{n}, n.children...) {
			if (c == n && isRoot) || c.clusters == 0 || c.cluster != 0 {
				continue
			}

			if next+c.clusters > g.clusters+2 {
				return fmt.Errorf("fat: the files need more than the volume's %d bytes", size)
			}

			c.cluster, next = next, next+c.clusters
		}

		for _, c := range n.children {
			if c.dir {
				if err := assign(c, false); err != nil {
					return err
				}
			}
		}

		return nil
	}

	if err := assign(root, true); err != nil {
		return nil, err
	}

	used := g.clusterOffset(next)
	img := make([]byte, used)

	bootSector(img[:SectorSize], g, o, label)

	// FAT: the media byte and "clean, no errors", then the chains.
	fat := make([]byte, g.fatSecs*SectorSize)
	binary.LittleEndian.PutUint16(fat[0:], 0xff00|mediaFixedDisk)
	binary.LittleEndian.PutUint16(fat[2:], 0xffff)

	stamp := dosTime(o.ModTime)

	var write func(n *node, parent uint32, isRoot bool)

	write = func(n *node, parent uint32, isRoot bool) {
		var entries []byte

		if isRoot {
			entries = append(entries, dirEntry(label, attrVolumeID, 0, 0, stamp)...)
		} else {
			entries = append(entries, dirEntry(".          ", attrDirectory, n.cluster, 0, stamp)...)
			entries = append(entries, dirEntry("..         ", attrDirectory, parent, 0, stamp)...)
		}

		for _, c := range n.children {
			if c.dir {
				entries = append(entries, dirEntry(c.name, attrDirectory, c.cluster, 0, stamp)...)
				write(c, n.cluster, false)

				continue
			}

			entries = append(entries, dirEntry(c.name, attrArchive, c.cluster, uint32(len(c.data)), stamp)...)
			if c.clusters > 0 {
				chain(fat, c.cluster, c.clusters)
				copy(img[g.clusterOffset(c.cluster):], c.data)
			}
		}

		if isRoot {
			copy(img[int64(g.rootSector())*SectorSize:], entries)
			return
		}

		chain(fat, n.cluster, n.clusters)
		copy(img[g.clusterOffset(n.cluster):], entries)
	}

	write(root, 0, true)

	for i := range uint32(numFATs) {
		copy(img[int64(g.firstFATSector()+i*g.fatSecs)*SectorSize:], fat)
	}

	return img, nil
}

// clustersFor is how many clusters n items of size each take (at least
// one for a directory, none for an empty file).
func clustersFor(n, each int, g geometry) uint32 {
	b := n * each

	return uint32((b + g.clusterBytes() - 1) / g.clusterBytes())
}

// chain links n clusters from first, ending with end-of-chain.
func chain(fat []byte, first, n uint32) {
	for i := range n {
		next := uint16(first + i + 1)
		if i == n-1 {
			next = 0xffff
		}

		binary.LittleEndian.PutUint16(fat[(first+i)*2:], next)
	}
}

// add puts f into the tree under n.
func (n *node) add(f File) error {
	parts := strings.Split(strings.Trim(f.Path, "/"), "/")
	cur := n

	for i, p := range parts {
		name, err := shortName(p)
		if err != nil {
			return fmt.Errorf("fat: %s: %w", f.Path, err)
		}

		last := i == len(parts)-1

		j := slices.IndexFunc(cur.children, func(c *node) bool { return c.name == name })
		if j >= 0 {
			c := cur.children[j]
			if last || !c.dir {
				return fmt.Errorf("fat: %s: given twice, or a file where a directory is needed", f.Path)
			}

			cur = c

			continue
		}

		c := &node{name: name, dir: !last}
		if last {
			c.data = f.Data
		}

		cur.children = append(cur.children, c)
		cur = c
	}

	return nil
}
