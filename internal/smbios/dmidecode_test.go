package smbios_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/smbios"
	"github.com/talosbox/talosbox/internal/smbios/smbiostest"
)

// record is one structure as dmidecode prints it.
type record struct {
	typ    int
	fields map[string]string
}

var (
	handleLine  = regexp.MustCompile(`^Handle 0x([0-9A-F]{4}), DMI type (\d+), \d+ bytes$`)
	versionLine = regexp.MustCompile(`^SMBIOS ([0-9.]+) present\.$`)
)

// dmidecode decodes a table with Debian's dmidecode, from the file
// --dump-bin writes, and returns the version it read (after its fixups)
// and its records by handle.
func dmidecode(t *testing.T, m machine) (string, map[uint16]record) {
	t.Helper()

	bin, err := exec.LookPath("dmidecode")
	if err != nil {
		t.Fatalf("dmidecode is the judge of these tests and is not installed: apt-get install -y dmidecode (%v)", err)
	}

	dump := filepath.Join(t.TempDir(), m.name+".bin")
	if err := os.WriteFile(dump, smbiostest.Dump(m.ep, m.table), 0o644); err != nil {
		t.Fatal(err)
	}

	var stderr bytes.Buffer

	cmd := exec.Command(bin, "--from-dump", dump)
	cmd.Stderr = &stderr

	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dmidecode --from-dump: %v: %s", err, stderr.String())
	}

	// A table dmidecode finds fault with is a bad fixture, not a
	// judgement; the version fixup is the point of one fixture.
	for line := range strings.Lines(stderr.String()) {
		if !strings.HasPrefix(line, "SMBIOS version fixup") {
			t.Fatalf("dmidecode complains about the table: %s", stderr.String())
		}
	}

	records := map[uint16]record{}
	version := ""

	var cur map[string]string // the fields of the record being read

	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()

		if m := versionLine.FindStringSubmatch(line); m != nil {
			version = m[1]
		}

		if m := handleLine.FindStringSubmatch(line); m != nil {
			h, _ := strconv.ParseUint(m[1], 16, 16)
			typ, _ := strconv.Atoi(m[2])
			cur = map[string]string{}
			records[uint16(h)] = record{typ: typ, fields: cur}

			continue
		}

		// One tab: "Key: value"; two tabs continue a list, skipped.
		if cur == nil || !strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "\t\t") {
			continue
		}

		k, v, _ := strings.Cut(line[1:], ":")
		cur[k] = strings.TrimPrefix(v, " ")
	}

	if len(records) == 0 {
		t.Fatalf("dmidecode printed no structures:\n%s", out)
	}

	return version, records
}

// str is what the parser should make of a string dmidecode printed: it
// trims, and returns "" for no string, a bad index and the O.E.M.
// placeholder.
func str(v string) string {
	v = strings.TrimSpace(v)

	switch {
	case v == "Not Specified", v == "<BAD INDEX>", strings.EqualFold(v, "To Be Filled By O.E.M."):
		return ""
	}

	return v
}

// number reads "4000 MHz" or "3200 MT/s"; "Unknown" and absent are 0.
func number(t *testing.T, v, unit string) uint64 {
	t.Helper()

	if v == "" || v == "Unknown" {
		return 0
	}

	n, err := strconv.ParseUint(strings.TrimSuffix(v, " "+unit), 10, 64)
	if err != nil {
		t.Fatalf("dmidecode printed %q, want a number of %s", v, unit)
	}

	return n
}

// sizeKiB reads a memory size ("16 GB", "512 kB"): installed is false for
// an empty slot, the size 0 when unknown.
func sizeKiB(t *testing.T, v string) (kib uint64, installed bool) {
	t.Helper()

	switch v {
	case "No Module Installed":
		return 0, false
	case "Unknown":
		return 0, true
	}

	num, unit, _ := strings.Cut(v, " ")

	shift, ok := map[string]uint{"kB": 0, "MB": 10, "GB": 20, "TB": 30}[unit]
	n, err := strconv.ParseUint(num, 10, 64)

	if !ok || err != nil {
		t.Fatalf("dmidecode printed size %q", v)
	}

	return n << shift, true
}

// TestAgainstDmidecode decodes every fixture with the parser and with
// dmidecode and compares what Talos's resources are made of.
func TestAgainstDmidecode(t *testing.T) {
	for _, m := range machines() {
		t.Run(m.name, func(t *testing.T) {
			got, err := smbios.Parse(m.ep, m.table)
			if err != nil {
				t.Fatal(err)
			}

			version, want := dmidecode(t, m)

			// dmidecode prints 2.x versions without the revision.
			if v := got.Version; version != v.String() && version != fmt.Sprintf("%d.%d", v.Major, v.Minor) {
				t.Errorf("version: parser %s, dmidecode %s", v, version)
			}

			seen := map[int]int{}

			for _, s := range got.Structures {
				if s.Type == smbios.TypeBIOS || s.Type == smbios.TypeSystem || s.Type == smbios.TypeProcessor || s.Type == smbios.TypeMemoryDevice {
					seen[int(s.Type)]++

					if r, ok := want[s.Handle]; !ok || r.typ != int(s.Type) {
						t.Errorf("handle %#04x: parsed as type %d, dmidecode has %+v", s.Handle, s.Type, r)
					}
				}
			}

			for h, r := range want {
				if r.typ == smbios.TypeBIOS || r.typ == smbios.TypeSystem || r.typ == smbios.TypeProcessor || r.typ == smbios.TypeMemoryDevice {
					seen[r.typ]--

					if seen[r.typ] < 0 {
						t.Errorf("dmidecode has a type %d structure (handle %#04x) the parser missed", r.typ, h)
					}
				}
			}

			for _, s := range got.Structures {
				r := want[s.Handle].fields

				switch s.Type {
				case smbios.TypeBIOS:
					compareBIOS(t, got.BIOS, r)
				case smbios.TypeSystem:
					compareSystem(t, got.System, r)
				}
			}

			for _, p := range got.Processors {
				compareProcessor(t, p, want[p.Handle].fields)
			}

			for _, d := range got.MemoryDevices {
				compareMemory(t, d, want[d.Handle].fields)
			}
		})
	}
}

type field struct {
	name      string
	got, want any
}

func check(t *testing.T, what string, fields []field) {
	t.Helper()

	for _, f := range fields {
		if fmt.Sprint(f.got) != fmt.Sprint(f.want) {
			t.Errorf("%s %s: parser %q, dmidecode %q", what, f.name, fmt.Sprint(f.got), fmt.Sprint(f.want))
		}
	}
}

func compareBIOS(t *testing.T, got smbios.BIOSInformation, r map[string]string) {
	check(t, "bios", []field{
		{"vendor", got.Vendor, str(r["Vendor"])},
		{"version", got.Version, str(r["Version"])},
		{"release date", got.ReleaseDate, str(r["Release Date"])},
	})
}

func compareSystem(t *testing.T, got smbios.SystemInformation, r map[string]string) {
	uuid := strings.ToLower(r["UUID"])
	if uuid == "not present" || uuid == "not settable" {
		uuid = ""
	}

	// The parser names out-of-range values as Talos does.
	wake := r["Wake-up Type"]
	if wake == "<OUT OF SPEC>" {
		wake = "Unknown"
	}

	check(t, "system", []field{
		{"manufacturer", got.Manufacturer, str(r["Manufacturer"])},
		{"product", got.ProductName, str(r["Product Name"])},
		{"version", got.Version, str(r["Version"])},
		{"serial", got.SerialNumber, str(r["Serial Number"])},
		{"uuid", got.UUID, uuid},
		{"wake-up type", got.WakeUpType, wake},
		{"sku", got.SKUNumber, str(r["SKU Number"])},
		{"family", got.Family, str(r["Family"])},
	})
}

func compareProcessor(t *testing.T, got smbios.Processor, r map[string]string) {
	what := fmt.Sprintf("processor %#04x", got.Handle)

	check(t, what, []field{
		{"socket", got.SocketDesignation, str(r["Socket Designation"])},
		{"manufacturer", got.Manufacturer, str(r["Manufacturer"])},
		{"version", got.Version, str(r["Version"])},
		{"max speed", got.MaxSpeedMHz, number(t, r["Max Speed"], "MHz")},
		{"current speed", got.CurrentSpeedMHz, number(t, r["Current Speed"], "MHz")},
		{"populated", got.Populated(), strings.HasPrefix(r["Status"], "Populated")},
		{"serial", got.SerialNumber, str(r["Serial Number"])},
		{"asset tag", got.AssetTag, str(r["Asset Tag"])},
		{"part number", got.PartNumber, str(r["Part Number"])},
		{"core count", got.CoreCount, number(t, r["Core Count"], "")},
		{"core enabled", got.CoreEnabled, number(t, r["Core Enabled"], "")},
		{"thread count", got.ThreadCount, number(t, r["Thread Count"], "")},
	})
}

func compareMemory(t *testing.T, got smbios.MemoryDevice, r map[string]string) {
	what := fmt.Sprintf("memory device %#04x", got.Handle)
	kib, installed := sizeKiB(t, r["Size"])

	fields := []field{
		{"installed", got.Installed, installed},
		{"size KiB", got.SizeKiB, kib},
		{"locator", got.DeviceLocator, str(r["Locator"])},
		{"bank locator", got.BankLocator, str(r["Bank Locator"])},
	}

	// dmidecode prints nothing more of an empty slot.
	if !installed {
		check(t, what, fields)
		return
	}

	check(t, what, append(fields, []field{
		{"speed", got.Speed, number(t, r["Speed"], "MT/s")},
		{"configured speed", got.ConfiguredSpeed, number(t, r["Configured Memory Speed"], "MT/s")},
		{"manufacturer", got.Manufacturer, str(r["Manufacturer"])},
		{"serial", got.SerialNumber, str(r["Serial Number"])},
		{"asset tag", got.AssetTag, str(r["Asset Tag"])},
		{"part number", got.PartNumber, str(r["Part Number"])},
	}...))
}
