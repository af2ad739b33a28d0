package disk_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
)

func writeAt(t *testing.T, path string, off int64, data []byte) {
	t.Helper()

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
}

func TestProbe(t *testing.T) {
	ext4Magic := make([]byte, 2)
	binary.LittleEndian.PutUint16(ext4Magic, 0xEF53)

	type at struct {
		off  int64
		data []byte
	}

	tests := []struct {
		name   string
		writes []at
		want   string
	}{
		{"zeroes", nil, ""},
		{"ext4 superblock magic", []at{{1080, ext4Magic}}, disk.ProbeExt4},
		{"xfs", []at{{0, []byte("XFSB")}}, disk.ProbeXFS},
		{"luks", []at{{0, []byte("LUKS\xba\xbe")}}, disk.ProbeLUKS},
		{"fat32", []at{{82, []byte("FAT32   ")}, {510, []byte{0x55, 0xAA}}}, disk.ProbeVFAT},
		{"fat16", []at{{54, []byte("FAT16   ")}, {510, []byte{0x55, 0xAA}}}, disk.ProbeVFAT},
		{"boot signature alone", []at{{510, []byte{0x55, 0xAA}}}, ""},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := image(t, 8*disk.MiB)

			// At an offset, as a partition inside a disk image is.
			const base = 2 * disk.MiB
			for _, w := range tt.writes {
				writeAt(t, img, base+w.off, w.data)
			}

			f, err := os.Open(img)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()

			got, err := disk.Probe(disk.Region{File: f, Offset: base, Size: 4 * disk.MiB})
			if err != nil {
				t.Fatal(err)
			}

			if got != tt.want {
				t.Errorf("Probe = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFormatAndWipe(t *testing.T) {
	e2fsck := tool(t, "e2fsck", "e2fsprogs")

	tests := []struct {
		name string
		size int64
	}{
		{"1 KiB blocks (under 512 MiB)", 100 * disk.MiB},
		{"4 KiB blocks", 600 * disk.MiB},
		{"4 KiB blocks, many groups", 3900 * disk.MiB},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := image(t, tt.size+2*disk.MiB)

			f, err := os.OpenFile(img, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()

			r := disk.Region{File: f, Offset: disk.MiB, Size: tt.size}

			// The byte after the region is left alone by the format and the wipe.
			writeAt(t, img, r.Offset+r.Size, []byte{0xAB})

			if err := disk.FormatExt4(r, "STATE"); err != nil {
				t.Fatal(err)
			}

			if got, _ := disk.Probe(r); got != disk.ProbeExt4 {
				t.Fatalf("after format Probe = %q", got)
			}

			// The kernel counts an inode table in whole blocks: a group's
			// inodes must fill them, or it reports group 0 as corrupt.
			sb := make([]byte, 1024)
			if _, err := f.ReadAt(sb, r.Offset+1024); err != nil {
				t.Fatal(err)
			}

			block := uint32(1024) << binary.LittleEndian.Uint32(sb[24:])
			perGroup := binary.LittleEndian.Uint32(sb[40:])
			inodeSize := uint32(binary.LittleEndian.Uint16(sb[88:]))

			if perGroup%(block/inodeSize) != 0 {
				t.Errorf("%d inodes per group do not fill %d-byte blocks of %d-byte inodes", perGroup, block, inodeSize)
			}

			check := exec.Command(e2fsck, "-fn", fmt.Sprintf("%s?offset=%d", img, r.Offset))
			if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), "STATE: ") {
				t.Fatalf("e2fsck: %v\n%s", err, out)
			}

			if err := disk.Wipe(r); err != nil {
				t.Fatal(err)
			}

			if got, _ := disk.Probe(r); got != "" {
				t.Fatalf("after wipe Probe = %q", got)
			}

			b := make([]byte, 1)
			if _, err := f.ReadAt(b, r.Offset+r.Size); err != nil || b[0] != 0xAB {
				t.Fatalf("wipe went past the region: %x %v", b, err)
			}

			if out, err := exec.Command(e2fsck, "-fn", fmt.Sprintf("%s?offset=%d", img, r.Offset)).CombinedOutput(); err == nil {
				t.Fatalf("e2fsck still finds a filesystem after the wipe:\n%s", out)
			}
		})
	}
}
