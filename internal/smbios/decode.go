package smbios

import (
	"bytes"
	"fmt"
)

// The structure types decoded here.
const (
	TypeBIOS         = 0
	TypeSystem       = 1
	TypeProcessor    = 4
	TypeMemoryDevice = 17
)

// BIOSInformation is the type 0 structure.
type BIOSInformation struct {
	Vendor      string
	Version     string
	ReleaseDate string
}

// SystemInformation is the type 1 structure.
type SystemInformation struct {
	Manufacturer string
	ProductName  string
	Version      string
	SerialNumber string
	// UUID is lower case, "" when the table has none or says it is not
	// present (all zeros) or not set (all ones).
	UUID string
	// WakeUpType is the event that powered the machine on, named as
	// dmidecode and Talos name it; "" for a 2.0 table, which lacks it.
	WakeUpType string
	SKUNumber  string
	Family     string
}

// Processor is a type 4 structure: one socket.
type Processor struct {
	Handle            uint16
	SocketDesignation string
	Manufacturer      string
	// Version is the model name ("Intel(R) Xeon(R) ...").
	Version string
	// MaxSpeedMHz and CurrentSpeedMHz are 0 when unknown.
	MaxSpeedMHz     uint16
	CurrentSpeedMHz uint16
	// Status is the raw status byte: bit 6 populated, bits 2:0 CPU status.
	Status       uint8
	SerialNumber string
	AssetTag     string
	PartNumber   string
	// CoreCount, CoreEnabled and ThreadCount are 0 when unknown. SMBIOS 3
	// moved counts above 255 to 16-bit fields, flagged by 0xFF in the old.
	CoreCount   uint16
	CoreEnabled uint16
	ThreadCount uint16
}

// Populated says whether a processor sits in the socket.
func (p Processor) Populated() bool { return p.Status&0x40 != 0 }

// MemoryDevice is a type 17 structure: one memory slot.
type MemoryDevice struct {
	Handle        uint16
	DeviceLocator string
	BankLocator   string
	// Installed is false for an empty slot.
	Installed bool
	// SizeKiB is the module's size; 0 when the table does not know it.
	SizeKiB uint64
	// Speed and ConfiguredSpeed are in MT/s, 0 when unknown.
	Speed           uint32
	ConfiguredSpeed uint32
	Manufacturer    string
	SerialNumber    string
	AssetTag        string
	PartNumber      string
}

// SMBIOS is a decoded table.
type SMBIOS struct {
	Version    Version
	Structures []Structure
	// BIOS and System come from the first structure of their types, as
	// the specification allows one each.
	BIOS          BIOSInformation
	System        SystemInformation
	Processors    []Processor
	MemoryDevices []MemoryDevice
}

// Parse decodes an entry point and the table it describes (Linux's
// smbios_entry_point and DMI files).
func Parse(entryPoint, table []byte) (*SMBIOS, error) {
	ep, err := ParseEntryPoint(entryPoint)
	if err != nil {
		return nil, err
	}

	structs, err := ParseStructures(table, ep)
	if err != nil {
		return nil, err
	}

	out := &SMBIOS{Version: ep.Version, Structures: structs}
	seen := map[uint8]bool{}

	for _, s := range structs {
		switch s.Type {
		case TypeBIOS:
			if !seen[s.Type] {
				out.BIOS = decodeBIOS(s)
			}
		case TypeSystem:
			if !seen[s.Type] {
				out.System = decodeSystem(s, ep.Version)
			}
		case TypeProcessor:
			out.Processors = append(out.Processors, decodeProcessor(s))
		case TypeMemoryDevice:
			out.MemoryDevices = append(out.MemoryDevices, decodeMemoryDevice(s))
		}

		seen[s.Type] = true
	}

	return out, nil
}

func decodeBIOS(s Structure) BIOSInformation {
	return BIOSInformation{Vendor: s.StringAt(0x04), Version: s.StringAt(0x05), ReleaseDate: s.StringAt(0x08)}
}

// wakeUpTypes are the names of the wake-up type values; others are
// "Unknown", as in Talos.
var wakeUpTypes = []string{"Reserved", "Other", "Unknown", "APM Timer", "Modem Ring", "LAN Remote", "Power Switch", "PCI PME#", "AC Power Restored"}

func decodeSystem(s Structure, v Version) SystemInformation {
	out := SystemInformation{
		Manufacturer: s.StringAt(0x04),
		ProductName:  s.StringAt(0x05),
		Version:      s.StringAt(0x06),
		SerialNumber: s.StringAt(0x07),
		SKUNumber:    s.StringAt(0x19),
		Family:       s.StringAt(0x1A),
	}

	if len(s.Formatted) >= 0x18 {
		out.UUID = formatUUID(s.Formatted[0x08:0x18], v)
	}

	if w, ok := s.Byte(0x18); ok {
		out.WakeUpType = "Unknown"
		if int(w) < len(wakeUpTypes) {
			out.WakeUpType = wakeUpTypes[w]
		}
	}

	return out
}

// formatUUID writes the 16 UUID bytes in the canonical form. Since 2.6
// the first three fields are little-endian (as in a Windows GUID); before,
// firmware wrote them in network order, and the specification was unclear
// enough that dmidecode and Linux print such tables' bytes as they are.
func formatUUID(b []byte, v Version) string {
	if bytes.Count(b, []byte{0}) == len(b) || bytes.Count(b, []byte{0xFF}) == len(b) {
		return ""
	}

	u := [16]byte(b)

	if v.AtLeast(2, 6) {
		u[0], u[1], u[2], u[3] = u[3], u[2], u[1], u[0]
		u[4], u[5] = u[5], u[4]
		u[6], u[7] = u[7], u[6]
	}

	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func decodeProcessor(s Structure) Processor {
	p := Processor{
		Handle:            s.Handle,
		SocketDesignation: s.StringAt(0x04),
		Manufacturer:      s.StringAt(0x07),
		Version:           s.StringAt(0x10),
		SerialNumber:      s.StringAt(0x20),
		AssetTag:          s.StringAt(0x21),
		PartNumber:        s.StringAt(0x22),
	}

	p.MaxSpeedMHz, _ = s.Word(0x14)
	p.CurrentSpeedMHz, _ = s.Word(0x16)
	p.Status, _ = s.Byte(0x18)
	p.CoreCount = count(s, 0x23, 0x2A)
	p.CoreEnabled = count(s, 0x24, 0x2C)
	p.ThreadCount = count(s, 0x25, 0x2E)

	return p
}

// count reads a processor count: the byte at off, or, when that is 0xFF
// and the table has it, the 16-bit field at off2 (as dmidecode reads it).
func count(s Structure, off, off2 int) uint16 {
	b, _ := s.Byte(off)
	if b == 0xFF {
		if w, ok := s.Word(off2); ok {
			return w
		}
	}

	return uint16(b)
}

// Memory device sizes: 0 is an empty slot, 0xFFFF unknown, 0x7FFF "see
// the extended size"; bit 15 set means the rest counts KiB, not MiB.
const (
	sizeEmpty    = 0
	sizeUnknown  = 0xFFFF
	sizeExtended = 0x7FFF
	sizeInKiB    = 0x8000
	// speedExtended in the speed fields points at the 32-bit fields.
	speedExtended = 0xFFFF
)

func decodeMemoryDevice(s Structure) MemoryDevice {
	m := MemoryDevice{
		Handle:        s.Handle,
		DeviceLocator: s.StringAt(0x10),
		BankLocator:   s.StringAt(0x11),
		Manufacturer:  s.StringAt(0x17),
		SerialNumber:  s.StringAt(0x18),
		AssetTag:      s.StringAt(0x19),
		PartNumber:    s.StringAt(0x1A),
	}

	size, _ := s.Word(0x0C)
	ext, hasExt := s.DWord(0x1C)

	switch {
	case size == sizeEmpty:
	case size == sizeUnknown:
		m.Installed = true
	case size == sizeExtended && hasExt:
		// Bit 31 is reserved; bits 30:0 count MiB.
		m.Installed, m.SizeKiB = true, uint64(ext&0x7FFFFFFF)<<10
	case size&sizeInKiB != 0:
		m.Installed, m.SizeKiB = true, uint64(size&^sizeInKiB)
	default:
		m.Installed, m.SizeKiB = true, uint64(size)<<10
	}

	m.Speed = speed(s, 0x15, 0x54)
	m.ConfiguredSpeed = speed(s, 0x20, 0x58)

	return m
}

// speed reads a memory speed: the word at off, or the 32-bit field at
// off2 when the word says the speed does not fit (65535 MT/s or more).
func speed(s Structure, off, off2 int) uint32 {
	w, _ := s.Word(off)
	if w != speedExtended {
		return uint32(w)
	}

	ext, _ := s.DWord(off2)

	return ext & 0x7FFFFFFF
}
