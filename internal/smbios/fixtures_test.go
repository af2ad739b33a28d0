package smbios_test

import (
	"github.com/talosbox/talosbox/internal/smbios/smbiostest"
)

// machine is a test table: an entry point and the table it points to.
type machine struct {
	name      string
	ep, table []byte
}

// uuidBytes are the 16 UUID bytes of the fixtures, as stored in the table.
var uuidBytes = []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}

// bios is a type 0 structure of SMBIOS 2.4 and later.
func bios(vendor, version, date string) *smbiostest.Struct {
	return smbiostest.New(0, 0x0000, 0x18).Str(0x04, vendor).Str(0x05, version).Word(0x06, 0xE800).Str(0x08, date).
		Byte(0x09, 0x0F).DWord(0x0A, 0x08).Byte(0x14, 2).Byte(0x15, 17)
}

// system is a type 1 structure of SMBIOS 2.4 and later.
func system(manufacturer, product, version, serial string, uuid []byte, wake uint8, sku, family string) *smbiostest.Struct {
	return smbiostest.New(1, 0x0001, 0x1B).Str(0x04, manufacturer).Str(0x05, product).Str(0x06, version).Str(0x07, serial).
		Bytes(0x08, uuid).Byte(0x18, wake).Str(0x19, sku).Str(0x1A, family)
}

// cpu is a type 4 structure of the given length (0x28: 2.5, 0x2A: 2.6,
// 0x30: 3.0), populated when status has bit 6.
type cpu struct {
	length                     int
	socket, manufacturer, ver  string
	maxMHz, curMHz             uint16
	status                     uint8
	serial, asset, part        string
	cores, enabled, threads    uint8
	cores2, enabled2, threads2 uint16
}

func (c cpu) build(handle uint16) *smbiostest.Struct {
	s := smbiostest.New(4, handle, c.length).Str(0x04, c.socket).Byte(0x05, 3).Byte(0x06, 0x02).Str(0x07, c.manufacturer).
		DWord(0x08, 0x000606A6).Str(0x10, c.ver).Byte(0x11, 0x8C).Word(0x12, 100).Word(0x14, c.maxMHz).Word(0x16, c.curMHz).
		Byte(0x18, c.status).Byte(0x19, 0x01).Word(0x1A, 0xFFFF).Word(0x1C, 0xFFFF).Word(0x1E, 0xFFFF).
		Str(0x20, c.serial).Str(0x21, c.asset).Str(0x22, c.part).Byte(0x23, c.cores).Byte(0x24, c.enabled).Byte(0x25, c.threads).
		Word(0x26, 0x04)

	if c.length >= 0x2A {
		s.Word(0x28, 0x02)
	}

	if c.length >= 0x30 {
		s.Word(0x2A, c.cores2).Word(0x2C, c.enabled2).Word(0x2E, c.threads2)
	}

	return s
}

// dimm is a type 17 structure of the given length (0x1B: 2.3, 0x28: 2.8,
// 0x5C: 3.3).
type dimm struct {
	length                      int
	locator, bank               string
	size                        uint16
	extSize                     uint32
	speed, confSpeed            uint16
	extSpeed, extConfSpeed      uint32
	manufacturer, serial, asset string
	part                        string
	// badSerial points the serial number past the string set.
	badSerial bool
}

func (d dimm) build(handle uint16) *smbiostest.Struct {
	s := smbiostest.New(17, handle, d.length).Word(0x04, 0x1000).Word(0x06, 0xFFFE).Word(0x08, 72).Word(0x0A, 64).
		Word(0x0C, d.size).Byte(0x0E, 0x09).Str(0x10, d.locator).Str(0x11, d.bank).Byte(0x12, 0x1A).Word(0x13, 0x80).
		Word(0x15, d.speed).Str(0x17, d.manufacturer).Str(0x18, d.serial).Str(0x19, d.asset).Str(0x1A, d.part)

	if d.badSerial {
		s.Byte(0x18, 9)
	}

	if d.length >= 0x22 {
		s.Byte(0x1B, 2).DWord(0x1C, d.extSize).Word(0x20, d.confSpeed)
	}

	if d.length >= 0x28 {
		s.Word(0x22, 1200).Word(0x24, 1200).Word(0x26, 1200)
	}

	if d.length >= 0x5C {
		s.DWord(0x54, d.extSpeed).DWord(0x58, d.extConfSpeed)
	}

	return s
}

// smbios3 builds an SMBIOS 3 machine.
func smbios3(name string, major, minor uint8, structs ...*smbiostest.Struct) machine {
	table := smbiostest.Table(structs...)

	return machine{name: name, ep: smbiostest.EntryPoint3(major, minor, 0, uint32(len(table)), 0x7A3E9000), table: table}
}

// smbios2 builds an SMBIOS 2.x machine.
func smbios2(name string, major, minor uint8, structs ...*smbiostest.Struct) machine {
	table := smbiostest.Table(structs...)

	return machine{name: name, ep: smbiostest.EntryPoint2(major, minor, uint16(len(table)), uint16(len(structs)+1), 0x000F0000), table: table}
}

// machines are the fixtures every test of the package reads: the cases
// dmidecode judges, the seed corpus of FuzzParse.
func machines() []machine {
	return []machine{
		smbios3("smbios-3.3-server", 3, 3,
			bios("Acme BIOS Inc.", "2.17.1", "03/14/2024"),
			system("Acme Computers", "RoadRunner 9000", "Rev A", "SN-0042", uuidBytes, 6, "SKU-7", "Servers"),
			cpu{length: 0x30, socket: "CPU 0", manufacturer: "Intel(R) Corporation", ver: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
				maxMHz: 4000, curMHz: 2000, status: 0x41, asset: "PROC ASSET", part: "PN-123",
				cores: 0xFF, enabled: 0xFF, threads: 0xFF, cores2: 300, enabled2: 290, threads2: 600}.build(0x0400),
			cpu{length: 0x30, socket: "CPU 1", status: 0x00}.build(0x0401),
			dimm{length: 0x5C, locator: "DIMM 0", bank: "P0 CHANNEL A", size: 0x4000, speed: 3200, confSpeed: 2933,
				manufacturer: "Samsung", serial: "0xDEADBEEF", part: "M393A2K43DB3-CWE   "}.build(0x1100),
			dimm{length: 0x5C, locator: "DIMM 1", bank: "P0 CHANNEL B", size: 0x7FFF, extSize: 0x10000, speed: 0xFFFF, extSpeed: 70000,
				confSpeed: 0xFFFF, extConfSpeed: 68000, manufacturer: "Micron", asset: "DIMM1-AT"}.build(0x1101),
			dimm{length: 0x5C, locator: "DIMM 2", size: 0x8000 | 512, manufacturer: "Tiny"}.build(0x1102),
			dimm{length: 0x5C, locator: "DIMM 3", bank: "P0 CHANNEL D", size: 0}.build(0x1103),
			dimm{length: 0x5C, locator: "DIMM 4", size: 0xFFFF, manufacturer: "Unknown Co", badSerial: true}.build(0x1104),
		),
		smbios2("smbios-2.8-desktop", 2, 8,
			bios("American Megatrends Inc.", "P2.10", "01/02/2020"),
			system("To Be Filled By O.E.M.", "B450 Steel", "1.0", "  padded serial  ", uuidBytes, 1, "", ""),
			cpu{length: 0x2A, socket: "AM4", manufacturer: "Advanced Micro Devices, Inc.", ver: "AMD Ryzen 7 3700X 8-Core Processor",
				maxMHz: 4400, curMHz: 3600, status: 0x41, serial: "Unknown", cores: 8, enabled: 6, threads: 16}.build(0x0004),
			dimm{length: 0x28, locator: "DIMM_A1", bank: "BANK 0", size: 8192, speed: 2400, confSpeed: 2133, manufacturer: "Kingston",
				serial: "12345678", part: "KHX2400C15/8G"}.build(0x0011),
			dimm{length: 0x28, locator: "DIMM_B1", bank: "BANK 1", size: 0}.build(0x0012),
		),
		smbios2("smbios-2.5-legacy", 2, 5,
			system("Old Iron", "Model 5", "", "OI-5", uuidBytes, 2, "", ""),
			cpu{length: 0x28, socket: "Socket 775", manufacturer: "Intel", ver: "Core 2 Duo", maxMHz: 3000, curMHz: 2400,
				status: 0x41, cores: 2, enabled: 2, threads: 2}.build(0x0004),
			dimm{length: 0x1B, locator: "DIMM0", bank: "BANK0", size: 0x7FFF, speed: 800, manufacturer: "Generic"}.build(0x0011),
		),
		// 2.51 is firmware's spelling of 2.6: the UUID is little-endian.
		smbios2("smbios-2.51-fixup", 2, 51,
			system("Fixup Inc.", "F1", "", "", uuidBytes, 3, "", ""),
		),
		// 2.33 is firmware's spelling of 2.3: the UUID is in table order.
		smbios2("smbios-2.33-fixup", 2, 33,
			system("Fixup Inc.", "F2", "", "", uuidBytes, 4, "", ""),
		),
		smbios3("smbios-3.0-uuid-not-present", 3, 0,
			system("Blank", "Zeros", "", "", make([]byte, 16), 0, "", ""),
			cpu{length: 0x30, socket: "CPU0", manufacturer: "QEMU", ver: "pc-q35-8.2", maxMHz: 2000, curMHz: 2000, status: 0x41,
				cores: 4, enabled: 4, threads: 4, cores2: 4, enabled2: 4, threads2: 4}.build(0x0400),
		),
		smbios2("smbios-2.7-uuid-not-settable", 2, 7,
			system("Blank", "Ones", "", "", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, 9, "", ""),
		),
	}
}
