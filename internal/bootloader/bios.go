package bootloader

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// Offsets in GRUB's i386-pc images (grub/include/grub/i386/pc/boot.h and
// util/setup.c), and the sector size BIOS disks are addressed in.
const (
	sectorSize = 512

	bootBPBStart      = 0x03  // the DOS BPB copied from the disk, if any
	bootBPBEnd        = 0x5a  //
	bootKernelSector  = 0x5c  // uint64 LE: where core.img starts
	bootDriveCheck    = 0x66  // a 2-byte jump; NOPs trust the BIOS's drive number
	bootWindowsNTMark = 0x1b8 // from here on: disk signature, partition table, 55 AA

	// The first blocklist entry sits at the end of core.img's first sector
	// (diskboot.img): start (uint64), len (uint16), segment (uint16).
	blocklistStart   = sectorSize - 12
	blocklistLen     = sectorSize - 4
	blocklistSegment = sectorSize - 2
	kernelSegment    = 0x800 + sectorSize>>4 // GRUB_BOOT_I386_PC_KERNEL_SEG + one sector
)

// InstallBIOS writes GRUB's boot sector into the MBR of disk (keeping the
// partition table and disk signature) and core.img at sector coreLBA (the
// BIOS boot partition's first, which has room for maxSectors), with the
// addresses patched as grub-bios-setup patches them.
func InstallBIOS(disk io.ReadWriteSeeker, bootImg, coreImg []byte, coreLBA, maxSectors uint64) error {
	if len(bootImg) != sectorSize || bootImg[510] != 0x55 || bootImg[511] != 0xaa {
		return fmt.Errorf("grub boot.img: %d bytes without the 55 AA signature: not GRUB's i386-pc boot image", len(bootImg))
	}

	sectors := uint64(len(coreImg)+sectorSize-1) / sectorSize
	if len(coreImg) < sectorSize || sectors < 2 {
		return fmt.Errorf("grub core.img: %d bytes: too short", len(coreImg))
	}

	if sectors > maxSectors {
		return fmt.Errorf("grub core.img: %d sectors do not fit the BIOS boot partition's %d", sectors, maxSectors)
	}

	core := make([]byte, sectors*sectorSize)
	copy(core, coreImg)

	if got := binary.LittleEndian.Uint16(core[blocklistLen:]); uint64(got) != sectors-1 {
		return fmt.Errorf("grub core.img: its blocklist says %d sectors, the image has %d: not made by grub-mkimage -O i386-pc", got, sectors-1)
	}

	if got := binary.LittleEndian.Uint16(core[blocklistSegment:]); got != kernelSegment {
		return fmt.Errorf("grub core.img: blocklist segment %#x, want %#x", got, kernelSegment)
	}

	binary.LittleEndian.PutUint64(core[blocklistStart:], coreLBA+1)

	mbr := make([]byte, sectorSize)
	if err := readAt(disk, mbr, 0); err != nil {
		return fmt.Errorf("read the MBR: %w", err)
	}

	if mbr[510] != 0x55 || mbr[511] != 0xaa {
		return fmt.Errorf("the disk has no MBR (no protective MBR from a GPT): write the partition table first")
	}

	boot := bytes.Clone(bootImg)
	copy(boot[bootBPBStart:bootBPBEnd], mbr[bootBPBStart:bootBPBEnd])
	binary.LittleEndian.PutUint64(boot[bootKernelSector:], coreLBA)
	boot[bootDriveCheck], boot[bootDriveCheck+1] = 0x90, 0x90
	copy(boot[bootWindowsNTMark:], mbr[bootWindowsNTMark:])

	// core.img first: a crash between the writes leaves the old boot
	// sector pointing at a complete core.
	if err := writeAt(disk, core, int64(coreLBA)*sectorSize); err != nil {
		return fmt.Errorf("write grub core.img: %w", err)
	}

	if err := writeAt(disk, boot, 0); err != nil {
		return fmt.Errorf("write the MBR boot code: %w", err)
	}

	return nil
}

func readAt(f io.ReadSeeker, b []byte, off int64) error {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}

	_, err := io.ReadFull(f, b)

	return err
}

func writeAt(f io.WriteSeeker, b []byte, off int64) error {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}

	_, err := f.Write(b)

	return err
}
