package fat

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// bootSector writes the FAT16 boot sector and BPB. The boot code only
// says the volume is not bootable: firmware that boots it reads
// EFI/BOOT/BOOTX64.EFI, never this sector.
func bootSector(b []byte, g geometry, o Options, label string) {
	copy(b[0:], []byte{0xeb, 0x3c, 0x90}) // jmp to the boot code, nop
	copy(b[3:11], "TALOSBOX")
	binary.LittleEndian.PutUint16(b[11:], SectorSize)
	b[13] = byte(g.secsPerCluster)
	binary.LittleEndian.PutUint16(b[14:], reservedSecs)
	b[16] = numFATs
	binary.LittleEndian.PutUint16(b[17:], rootEntries)

	if g.totalSecs < 1<<16 {
		binary.LittleEndian.PutUint16(b[19:], uint16(g.totalSecs))
	} else {
		binary.LittleEndian.PutUint32(b[32:], g.totalSecs)
	}

	b[21] = mediaFixedDisk
	binary.LittleEndian.PutUint16(b[22:], uint16(g.fatSecs))
	binary.LittleEndian.PutUint16(b[24:], 32) // sectors per track, heads: the
	binary.LittleEndian.PutUint16(b[26:], 64) // geometry mkfs.fat assumes
	binary.LittleEndian.PutUint32(b[28:], o.HiddenSectors)
	b[36] = 0x80 // drive number: a hard disk
	b[38] = 0x29 // extended boot signature: serial, label, type follow
	binary.LittleEndian.PutUint32(b[39:], o.Serial)
	copy(b[43:54], label)
	copy(b[54:62], "FAT16   ")

	// int 0x10 teletype of the message, then wait for a key and reboot
	// (int 0x16, int 0x19), as mkfs.fat's own boot code does.
	const msg = "This is not a bootable disk.\r\n"

	code := []byte{
		0x0e, 0x1f, // push cs; pop ds
		0xbe, 0x00, 0x7c, // mov si, 0x7c00+msg (patched below)
		0xac,       // lodsb
		0x22, 0xc0, // and al, al
		0x74, 0x0b, // jz done
		0x56,       // push si
		0xb4, 0x0e, // mov ah, 0x0e
		0xbb, 0x07, 0x00, // mov bx, 7
		0xcd, 0x10, // int 0x10
		0x5e,       // pop si
		0xeb, 0xf0, // jmp lodsb
		0x32, 0xe4, // done: xor ah, ah
		0xcd, 0x16, // int 0x16
		0xcd, 0x19, // int 0x19
		0xeb, 0xfe, // jmp $
	}

	const start = 62
	binary.LittleEndian.PutUint16(code[3:], uint16(0x7c00+start+len(code)))
	copy(b[start:], code)
	copy(b[start+len(code):], msg)
	b[510], b[511] = 0x55, 0xaa
}

// dirEntry is one 32-byte directory entry.
func dirEntry(name string, attr byte, cluster, size uint32, stamp [2]uint16) []byte {
	e := make([]byte, dirEntrySize)
	copy(e[0:11], name)
	e[11] = attr
	binary.LittleEndian.PutUint16(e[14:], stamp[1]) // creation time
	binary.LittleEndian.PutUint16(e[16:], stamp[0]) // creation date
	binary.LittleEndian.PutUint16(e[18:], stamp[0]) // last access date
	binary.LittleEndian.PutUint16(e[22:], stamp[1]) // modification time
	binary.LittleEndian.PutUint16(e[24:], stamp[0]) // modification date
	binary.LittleEndian.PutUint16(e[26:], uint16(cluster))
	binary.LittleEndian.PutUint32(e[28:], size)

	return e
}

// dosTime is t as FAT's date and time words (local time has no place in
// a reproducible image: t is taken in UTC), clamped to FAT's range.
func dosTime(t time.Time) [2]uint16 {
	t = t.UTC()
	if t.Year() < 1980 {
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	}

	if t.Year() > 2107 {
		t = time.Date(2107, 12, 31, 23, 59, 58, 0, time.UTC)
	}

	date := uint16(t.Year()-1980)<<9 | uint16(t.Month())<<5 | uint16(t.Day())
	clock := uint16(t.Hour())<<11 | uint16(t.Minute())<<5 | uint16(t.Second()/2)

	return [2]uint16{date, clock}
}

// shortNameChars are the characters an 8.3 name may hold besides A-Z and
// 0-9.
const shortNameChars = "!#$%&'()-@^_`{}~"

// shortName turns "BOOTX64.EFI" into the directory entry's "BOOTX64 EFI".
// Anything that would need a long file name entry is refused.
func shortName(s string) (string, error) {
	base, ext, _ := strings.Cut(s, ".")
	if base == "" || len(base) > 8 || len(ext) > 3 || strings.Contains(ext, ".") {
		return "", fmt.Errorf("%q is not an 8.3 name", s)
	}

	for _, r := range base + ext {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune(shortNameChars, r) {
			return "", fmt.Errorf("%q: only upper-case 8.3 names are written (no long file names)", s)
		}
	}

	return fmt.Sprintf("%-8s%-3s", base, ext), nil
}

// volumeLabel pads the label to 11 characters.
func volumeLabel(s string) (string, error) {
	if s == "" {
		s = "NO NAME"
	}

	if len(s) > 11 {
		return "", fmt.Errorf("fat: label %q: at most 11 characters", s)
	}

	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != ' ' && !strings.ContainsRune(shortNameChars, r) {
			return "", fmt.Errorf("fat: label %q: upper-case letters, digits and %s only", s, shortNameChars)
		}
	}

	return fmt.Sprintf("%-11s", s), nil
}
