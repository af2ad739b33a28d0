package smbios_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/smbios"
	"github.com/talosbox/talosbox/internal/smbios/smbiostest"
)

func fixture(t testing.TB, name string) machine {
	t.Helper()

	for _, m := range machines() {
		if m.name == name {
			return m
		}
	}

	t.Fatalf("no fixture %q", name)

	return machine{}
}

// TestParse pins what the fixtures hold, so the dmidecode comparison is
// known to cover the cases it is meant to: 16-bit core counts, extended
// sizes and speeds, KiB sizes, empty and unknown slots, both UUID orders.
func TestParse(t *testing.T) {
	server := fixture(t, "smbios-3.3-server")

	s, err := smbios.Parse(server.ep, server.table)
	if err != nil {
		t.Fatal(err)
	}

	if s.Version != (smbios.Version{Major: 3, Minor: 3}) {
		t.Errorf("version = %v", s.Version)
	}

	if want := (smbios.BIOSInformation{Vendor: "Acme BIOS Inc.", Version: "2.17.1", ReleaseDate: "03/14/2024"}); s.BIOS != want {
		t.Errorf("bios = %+v, want %+v", s.BIOS, want)
	}

	wantSys := smbios.SystemInformation{
		Manufacturer: "Acme Computers", ProductName: "RoadRunner 9000", Version: "Rev A", SerialNumber: "SN-0042",
		UUID: "33221100-5544-7766-8899-aabbccddeeff", WakeUpType: "Power Switch", SKUNumber: "SKU-7", Family: "Servers",
	}
	if s.System != wantSys {
		t.Errorf("system = %+v, want %+v", s.System, wantSys)
	}

	wantCPU := []smbios.Processor{
		{Handle: 0x0400, SocketDesignation: "CPU 0", Manufacturer: "Intel(R) Corporation", Version: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
			MaxSpeedMHz: 4000, CurrentSpeedMHz: 2000, Status: 0x41, AssetTag: "PROC ASSET", PartNumber: "PN-123",
			CoreCount: 300, CoreEnabled: 290, ThreadCount: 600},
		{Handle: 0x0401, SocketDesignation: "CPU 1"},
	}
	if !reflect.DeepEqual(s.Processors, wantCPU) {
		t.Errorf("processors =\n%+v\nwant\n%+v", s.Processors, wantCPU)
	}

	if s.Processors[0].Populated() == s.Processors[1].Populated() {
		t.Error("CPU 0 is populated, CPU 1 is not")
	}

	wantMem := []smbios.MemoryDevice{
		{Handle: 0x1100, DeviceLocator: "DIMM 0", BankLocator: "P0 CHANNEL A", Installed: true, SizeKiB: 16 << 20, Speed: 3200, ConfiguredSpeed: 2933,
			Manufacturer: "Samsung", SerialNumber: "0xDEADBEEF", PartNumber: "M393A2K43DB3-CWE"},
		{Handle: 0x1101, DeviceLocator: "DIMM 1", BankLocator: "P0 CHANNEL B", Installed: true, SizeKiB: 64 << 20, Speed: 70000, ConfiguredSpeed: 68000,
			Manufacturer: "Micron", AssetTag: "DIMM1-AT"},
		{Handle: 0x1102, DeviceLocator: "DIMM 2", Installed: true, SizeKiB: 512, Manufacturer: "Tiny"},
		{Handle: 0x1103, DeviceLocator: "DIMM 3", BankLocator: "P0 CHANNEL D"},
		{Handle: 0x1104, DeviceLocator: "DIMM 4", Installed: true, Manufacturer: "Unknown Co"},
	}
	if !reflect.DeepEqual(s.MemoryDevices, wantMem) {
		t.Errorf("memory devices =\n%+v\nwant\n%+v", s.MemoryDevices, wantMem)
	}

	for _, tc := range []struct {
		name string
		uuid string
	}{
		{"smbios-2.8-desktop", "33221100-5544-7766-8899-aabbccddeeff"},
		{"smbios-2.5-legacy", "00112233-4455-6677-8899-aabbccddeeff"},
		{"smbios-2.51-fixup", "33221100-5544-7766-8899-aabbccddeeff"},
		{"smbios-2.33-fixup", "00112233-4455-6677-8899-aabbccddeeff"},
		{"smbios-3.0-uuid-not-present", ""},
		{"smbios-2.7-uuid-not-settable", ""},
	} {
		m := fixture(t, tc.name)

		s, err := smbios.Parse(m.ep, m.table)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}

		if s.System.UUID != tc.uuid {
			t.Errorf("%s: uuid %q, want %q", tc.name, s.System.UUID, tc.uuid)
		}
	}
}

// TestStrings: strings are cleaned as Talos cleans them.
func TestStrings(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "Acme", "Acme"},
		{"trimmed", "  Acme \t", "Acme"},
		{"oem placeholder", "To Be Filled By O.E.M.", ""},
		{"oem placeholder, other case", "To be filled by O.E.M.", ""},
		{"not utf-8", "Acme\xff", ""},
		{"only spaces", "   ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := smbiostest.Table(smbiostest.New(1, 1, 0x1B).Str(0x04, tc.in))
			ep := smbiostest.EntryPoint3(3, 0, 0, uint32(len(table)), 0)

			s, err := smbios.Parse(ep, table)
			if err != nil {
				t.Fatal(err)
			}

			if s.System.Manufacturer != tc.want {
				t.Errorf("manufacturer %q, want %q", s.System.Manufacturer, tc.want)
			}
		})
	}
}

// TestParseErrors: broken entry points and tables give errors that say
// what is wrong and where, never a panic or a partial result.
func TestParseErrors(t *testing.T) {
	good := fixture(t, "smbios-3.3-server")
	good2 := fixture(t, "smbios-2.8-desktop")

	edit := func(b []byte, fix bool, f func(b []byte)) []byte {
		b = append([]byte(nil), b...)
		f(b)

		if fix {
			smbiostest.Fix(b)
		}

		return b
	}

	for _, tc := range []struct {
		name      string
		ep, table []byte
		is        error
		msg       string
	}{
		{"empty entry point", nil, good.table, smbios.ErrMalformed, "unknown anchor"},
		{"unknown anchor", []byte("_XYZ_ and more bytes than needed"), good.table, smbios.ErrMalformed, `unknown anchor "_XYZ_"`},
		{"smbios 3 entry point truncated", good.ep[:0x10], good.table, smbios.ErrTruncated, "smbios 3 entry point: 16 bytes"},
		{"smbios 3 bad checksum", edit(good.ep, false, func(b []byte) { b[0x07]++ }), good.table, smbios.ErrMalformed, "bad checksum"},
		{"smbios 3 length too large", edit(good.ep, true, func(b []byte) { b[0x06] = 0x40 }), good.table, smbios.ErrMalformed, "exceeds"},
		{"smbios 3 length past the data", edit(good.ep, true, func(b []byte) { b[0x06] = 0x1C }), good.table, smbios.ErrTruncated, "only 24 bytes"},
		{"smbios 2 entry point truncated", good2.ep[:0x1A], good2.table, smbios.ErrTruncated, "smbios 2 entry point: 26 bytes"},
		{"smbios 2 bad checksum", edit(good2.ep, false, func(b []byte) { b[0x06]++ }), good2.table, smbios.ErrMalformed, "bad checksum"},
		{"smbios 2 intermediate anchor", edit(good2.ep, true, func(b []byte) { b[0x11] = 'X' }), good2.table, smbios.ErrMalformed, "intermediate anchor"},
		{"smbios 2 intermediate checksum", edit(good2.ep, false, func(b []byte) { b[0x16]++; b[0x04]-- }), good2.table, smbios.ErrMalformed, "intermediate checksum"},
		{"smbios 2 table shorter than announced", good2.ep, good2.table[:len(good2.table)-10], smbios.ErrTruncated, "the entry point announces"},
		{"header cut", good.ep, good.table[:2], smbios.ErrTruncated, "structure #0 at offset 0x0: header"},
		{"length below the header", good.ep, edit(good.table, false, func(b []byte) { b[1] = 3 }), smbios.ErrMalformed, "length 3 is shorter"},
		{"formatted area cut", good.ep, good.table[:0x10], smbios.ErrTruncated, "type 0: formatted area of 24 bytes, 16 left"},
		{"string set cut", good.ep, good.table[:0x1A], smbios.ErrTruncated, "string set is not terminated"},
		{"second structure cut", good.ep, good.table[:0x50], smbios.ErrTruncated, "structure #1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := smbios.Parse(tc.ep, tc.table)
			if err == nil {
				t.Fatalf("parsed: %+v", s)
			}

			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q, want %v containing %q", err, tc.is, tc.msg)
			}

			if s != nil {
				t.Errorf("a result with the error: %+v", s)
			}
		})
	}
}

// TestTableEnds: a table ends at its end-of-table structure, its 2.x
// structure count or the end of the data, whatever follows.
func TestTableEnds(t *testing.T) {
	sys := smbiostest.New(1, 1, 0x1B).Str(0x04, "Acme")
	cpu := smbiostest.New(4, 4, 0x30).Str(0x04, "CPU 0")
	junk := []byte{0xFF, 0xFF, 0xFF}

	table := smbiostest.Table(sys, cpu)
	noEOT := append(sys.Encode(), cpu.Encode()...)

	for _, tc := range []struct {
		name       string
		ep, table  []byte
		structures int
	}{
		{"smbios 3 stops at end of table", smbiostest.EntryPoint3(3, 0, 0, uint32(len(table)+len(junk)), 0), append(table, junk...), 3},
		{"smbios 3 maximum is larger", smbiostest.EntryPoint3(3, 0, 0, 4096, 0), table, 3},
		{"smbios 3 without end of table", smbiostest.EntryPoint3(3, 0, 0, uint32(len(noEOT)), 0), noEOT, 2},
		{"smbios 3 maximum cuts the data", smbiostest.EntryPoint3(3, 0, 0, uint32(len(noEOT)), 0), append(noEOT, junk...), 2},
		{"smbios 2 structure count", smbiostest.EntryPoint2(2, 8, uint16(len(table)), 1, 0), table, 1},
		{"smbios 2 length", smbiostest.EntryPoint2(2, 8, uint16(len(noEOT)), 0, 0), append(noEOT, junk...), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := smbios.Parse(tc.ep, tc.table)
			if err != nil {
				t.Fatal(err)
			}

			if len(s.Structures) != tc.structures {
				t.Errorf("%d structures, want %d", len(s.Structures), tc.structures)
			}

			if s.System.Manufacturer != "Acme" {
				t.Errorf("system %+v", s.System)
			}
		})
	}
}

// TestRead reads the files where Linux exposes them; a machine without
// them has no table, which callers tell from a broken one.
func TestRead(t *testing.T) {
	m := fixture(t, "smbios-3.3-server")

	s, err := smbios.Read(smbiostest.Sysfs(t, m.ep, m.table))
	if err != nil {
		t.Fatal(err)
	}

	if s.System.ProductName != "RoadRunner 9000" || len(s.Processors) != 2 || len(s.MemoryDevices) != 5 {
		t.Errorf("read %+v", s)
	}

	_, err = smbios.Read(t.TempDir())
	if !errors.Is(err, smbios.ErrNoTable) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no table: error %v, want ErrNoTable and fs.ErrNotExist", err)
	}

	broken := smbiostest.Sysfs(t, m.ep, m.table[:0x10])

	_, err = smbios.Read(broken)
	if !errors.Is(err, smbios.ErrTruncated) || errors.Is(err, smbios.ErrNoTable) || !strings.Contains(err.Error(), filepath.Join(broken, "firmware/dmi/tables")) {
		t.Errorf("broken table: error %v, want ErrTruncated naming the directory", err)
	}

	if err := os.Remove(filepath.Join(broken, smbios.TablePath)); err != nil {
		t.Fatal(err)
	}

	if _, err := smbios.Read(broken); !errors.Is(err, smbios.ErrNoTable) {
		t.Errorf("entry point without table: error %v, want ErrNoTable", err)
	}
}
