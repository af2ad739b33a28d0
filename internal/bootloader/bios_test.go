package bootloader

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeImages are shaped like GRUB's i386-pc boot.img and a 3-sector
// core.img as grub-mkimage leaves them; the real ones are installed and
// booted by boot/metaltest's TestMetalBootFromDisk.
func fakeImages() (boot, core []byte) {
	boot = bytes.Repeat([]byte{0xb0}, sectorSize)
	boot[510], boot[511] = 0x55, 0xaa

	core = bytes.Repeat([]byte{0xc0}, 2*sectorSize+100)
	binary.LittleEndian.PutUint64(core[blocklistStart:], 2)
	binary.LittleEndian.PutUint16(core[blocklistLen:], 2)
	binary.LittleEndian.PutUint16(core[blocklistSegment:], kernelSegment)

	return boot, core
}

func diskImage(t *testing.T) *os.File {
	t.Helper()

	f, err := os.Create(filepath.Join(t.TempDir(), "disk.img"))
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { f.Close() })

	mbr := make([]byte, sectorSize)
	copy(mbr[bootWindowsNTMark:], []byte{1, 2, 3, 4, 0, 0, 0, 0xee}) // a disk signature and a protective entry
	mbr[510], mbr[511] = 0x55, 0xaa

	if _, err := f.WriteAt(mbr, 0); err != nil {
		t.Fatal(err)
	}

	if err := f.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}

	return f
}

func TestInstallBIOS(t *testing.T) {
	boot, core := fakeImages()
	f := diskImage(t)

	before := make([]byte, sectorSize)
	f.ReadAt(before, 0) //nolint:errcheck // checked below through the result

	if err := InstallBIOS(f, boot, core, 100, 16); err != nil {
		t.Fatal(err)
	}

	mbr := make([]byte, sectorSize)
	if _, err := f.ReadAt(mbr, 0); err != nil {
		t.Fatal(err)
	}

	if got := binary.LittleEndian.Uint64(mbr[bootKernelSector:]); got != 100 {
		t.Errorf("kernel sector %d, want 100", got)
	}

	if mbr[bootDriveCheck] != 0x90 || mbr[bootDriveCheck+1] != 0x90 {
		t.Errorf("drive check % x, want NOPs", mbr[bootDriveCheck:bootDriveCheck+2])
	}

	if !bytes.Equal(mbr[bootWindowsNTMark:], before[bootWindowsNTMark:]) {
		t.Errorf("the partition table changed")
	}

	if mbr[0] != 0xb0 || mbr[bootWindowsNTMark-1] != 0xb0 {
		t.Errorf("boot code not written")
	}

	got := make([]byte, 3*sectorSize)
	if _, err := f.ReadAt(got, 100*sectorSize); err != nil {
		t.Fatal(err)
	}

	if start := binary.LittleEndian.Uint64(got[blocklistStart:]); start != 101 {
		t.Errorf("core blocklist start %d, want 101", start)
	}

	if !bytes.Equal(got[sectorSize:2*sectorSize+100], core[sectorSize:]) || got[2*sectorSize+100] != 0 {
		t.Errorf("core.img's body is not what was given, zero-padded")
	}
}

func TestInstallBIOSRefuses(t *testing.T) {
	boot, core := fakeImages()

	for name, tc := range map[string]struct {
		boot, core []byte
		max        uint64
		noMBR      bool
		want       string
	}{
		"boot.img without signature": {boot: make([]byte, sectorSize), core: core, max: 16, want: "not GRUB's i386-pc boot image"},
		"core.img too large":         {boot: boot, core: core, max: 2, want: "do not fit the BIOS boot partition"},
		"core.img not from mkimage":  {boot: boot, core: make([]byte, 3*sectorSize), max: 16, want: "not made by grub-mkimage"},
		"core.img truncated":         {boot: boot, core: core[:100], max: 16, want: "too short"},
		"disk without MBR":           {boot: boot, core: core, max: 16, noMBR: true, want: "no MBR"},
	} {
		t.Run(name, func(t *testing.T) {
			f := diskImage(t)
			if tc.noMBR {
				f.WriteAt(make([]byte, sectorSize), 0) //nolint:errcheck // a plain file
			}

			before := make([]byte, 4096)
			f.ReadAt(before, 0) //nolint:errcheck // a plain file

			err := InstallBIOS(f, tc.boot, tc.core, 1, tc.max)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}

			after := make([]byte, 4096)
			f.ReadAt(after, 0) //nolint:errcheck // a plain file

			if !bytes.Equal(before, after) {
				t.Fatal("a refused install changed the disk")
			}
		})
	}
}
