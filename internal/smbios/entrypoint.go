package smbios

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Version is the SMBIOS version an entry point announces.
type Version struct {
	Major, Minor, Revision uint8
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Revision) }

// AtLeast says whether v is major.minor or newer: fields added by later
// versions of the specification are read only from tables that have them.
func (v Version) AtLeast(major, minor uint8) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// EntryPoint is the structure firmware places in memory (and Linux copies
// to /sys/firmware/dmi/tables/smbios_entry_point) to say where the table
// is and which version of the specification it follows.
type EntryPoint struct {
	Version Version
	// Bits is 64 for the SMBIOS 3 entry point ("_SM3_"), 32 for the 2.x
	// one ("_SM_").
	Bits int
	// TableAddress is the table's physical address. Linux already copied
	// the table out (to .../tables/DMI), so it is informational.
	TableAddress uint64
	// TableLength is the exact length of a 2.x table, the maximum length
	// of an SMBIOS 3 one (which ends at its end-of-table structure).
	TableLength uint32
	// Structures is how many structures a 2.x table holds; 0 for SMBIOS 3,
	// which does not say.
	Structures uint16
}

var (
	anchor64  = []byte("_SM3_")
	anchor32  = []byte("_SM_")
	anchorDMI = []byte("_DMI_")
)

const (
	minLength64  = 0x18
	minLength32  = 0x1E // SMBIOS 2.1 firmware wrote 0x1E for a 0x1F structure
	maxEPLength  = 0x20 // Linux and dmidecode refuse longer entry points
	dmiSection32 = 0x10 // offset of the "_DMI_" intermediate section
)

// ParseEntryPoint decodes an SMBIOS 3 (64-bit) or 2.x (32-bit) entry
// point, checking its anchors and checksums as Linux and dmidecode do.
func ParseEntryPoint(b []byte) (EntryPoint, error) {
	switch {
	case bytes.HasPrefix(b, anchor64):
		return parseEntryPoint64(b)
	case bytes.HasPrefix(b, anchor32):
		return parseEntryPoint32(b)
	}

	head := b[:min(len(b), 5)]

	return EntryPoint{}, fmt.Errorf("smbios entry point: unknown anchor %q (want %q or %q): %w", head, anchor64, anchor32, ErrMalformed)
}

func parseEntryPoint64(b []byte) (EntryPoint, error) {
	if len(b) < minLength64 {
		return EntryPoint{}, fmt.Errorf("smbios 3 entry point: %d bytes, need %d: %w", len(b), minLength64, ErrTruncated)
	}

	n := int(b[0x06])
	if err := checkLength("smbios 3 entry point", n, minLength64, len(b)); err != nil {
		return EntryPoint{}, err
	}

	if !checksumOK(b[:n]) {
		return EntryPoint{}, fmt.Errorf("smbios 3 entry point: bad checksum: %w", ErrMalformed)
	}

	return EntryPoint{
		Version:      Version{Major: b[0x07], Minor: b[0x08], Revision: b[0x09]},
		Bits:         64,
		TableLength:  binary.LittleEndian.Uint32(b[0x0C:]),
		TableAddress: binary.LittleEndian.Uint64(b[0x10:]),
	}, nil
}

func parseEntryPoint32(b []byte) (EntryPoint, error) {
	if len(b) < minLength32 {
		return EntryPoint{}, fmt.Errorf("smbios 2 entry point: %d bytes, need %d: %w", len(b), minLength32, ErrTruncated)
	}

	n := int(b[0x05])
	if err := checkLength("smbios 2 entry point", n, minLength32, len(b)); err != nil {
		return EntryPoint{}, err
	}

	if !checksumOK(b[:n]) {
		return EntryPoint{}, fmt.Errorf("smbios 2 entry point: bad checksum: %w", ErrMalformed)
	}

	if dmi := b[dmiSection32:]; !bytes.HasPrefix(dmi, anchorDMI) {
		return EntryPoint{}, fmt.Errorf("smbios 2 entry point: intermediate anchor %q, want %q: %w", dmi[:5], anchorDMI, ErrMalformed)
	}

	// The intermediate section is 15 bytes; an entry point copied with
	// the 2.1 firmware's short length lacks its last byte, and with it
	// the means to check it.
	if dmi := b[dmiSection32:]; len(dmi) >= 0x0F && !checksumOK(dmi[:0x0F]) {
		return EntryPoint{}, fmt.Errorf("smbios 2 entry point: bad intermediate checksum: %w", ErrMalformed)
	}

	return EntryPoint{
		Version:      fixupVersion(b[0x06], b[0x07]),
		Bits:         32,
		TableLength:  uint32(binary.LittleEndian.Uint16(b[0x16:])),
		TableAddress: uint64(binary.LittleEndian.Uint32(b[0x18:])),
		Structures:   binary.LittleEndian.Uint16(b[0x1C:]),
	}, nil
}

// fixupVersion corrects versions some 2.x firmware announces wrongly, as
// Linux and dmidecode do: 2.31 and 2.33 mean 2.3, 2.51 means 2.6. The
// latter matters, 2.6 changed the byte order of the system UUID.
func fixupVersion(major, minor uint8) Version {
	if major == 2 {
		switch minor {
		case 31, 33:
			minor = 3
		case 51:
			minor = 6
		}
	}

	return Version{Major: major, Minor: minor}
}

func checkLength(what string, n, least, have int) error {
	switch {
	case n < least:
		return fmt.Errorf("%s: length field %#x, need at least %#x: %w", what, n, least, ErrMalformed)
	case n > maxEPLength:
		return fmt.Errorf("%s: length field %#x exceeds %#x: %w", what, n, maxEPLength, ErrMalformed)
	case n > have:
		return fmt.Errorf("%s: length field %#x but only %d bytes: %w", what, n, have, ErrTruncated)
	}

	return nil
}

// checksumOK: the bytes of a checksummed block add up to zero.
func checksumOK(b []byte) bool {
	var sum byte
	for _, c := range b {
		sum += c
	}

	return sum == 0
}
