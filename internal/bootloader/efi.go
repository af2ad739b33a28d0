package bootloader

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/talosbox/talosbox/internal/fat"
)

// EFIBootPath is where UEFI firmware looks for a loader on a disk or an
// El Torito image that has no boot entry of its own in NVRAM (the
// "removable media" path), so an installed disk boots on any UEFI machine
// without efibootmgr.
const EFIBootPath = "EFI/BOOT/BOOTX64.EFI"

// ESPLabel is the FAT volume label of the EFI system partition.
const ESPLabel = "EFI"

// RenderESP lays out a FAT filesystem of size bytes holding grubEFI at
// EFIBootPath, for the EFI partition at sector firstSector of its disk
// (0 for a file of its own). It returns the bytes up to the end of the
// file (fat.Render); the volume's serial is taken from grubEFI's hash, so
// the same GRUB gives the same bytes and a caller can skip the write when
// the partition already holds them.
func RenderESP(grubEFI []byte, size int64, firstSector uint32) ([]byte, error) {
	sum := sha256.Sum256(grubEFI)

	img, err := fat.Render(size, []fat.File{{Path: EFIBootPath, Data: grubEFI}}, fat.Options{
		Label: ESPLabel, Serial: binary.LittleEndian.Uint32(sum[:4]), HiddenSectors: firstSector,
	})
	if err != nil {
		return nil, fmt.Errorf("EFI partition: %w", err)
	}

	return img, nil
}
