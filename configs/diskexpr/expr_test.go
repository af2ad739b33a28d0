package diskexpr_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs/diskexpr"
)

var (
	nvme = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/nvme0n1", Transport: "nvme", Size: 512 << 30, Model: "Samsung SSD 980",
		BusPath: "/pci0000:00/0000:00:1d.0/nvme/nvme0", Symlinks: []string{"/dev/disk/by-id/nvme-x"}}}
	vdb = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/vdb", Transport: "virtio", Size: 256 << 20, Rotational: true}}
	vda = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/vda", Transport: "virtio", Size: 6 << 30, Rotational: true}, SystemDisk: true}
)

// TestMatch: Talos's documented selectors, and the common forms, match
// the disks they should and only those.
func TestMatch(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		expr string
		want [3]bool // nvme, vdb, vda
	}{
		{`disk.dev_path == "/dev/vdb"`, [3]bool{false, true, false}},
		{`disk.transport == "nvme"`, [3]bool{true, false, false}},
		{`!system_disk`, [3]bool{true, true, false}},
		{`disk.size > 120u * GB && disk.size < 1u * TB`, [3]bool{true, false, false}},
		{`disk.transport == "virtio" && !disk.rotational && !system_disk`, [3]bool{false, false, false}},
		{`disk.size >= uint(1) * GiB && !system_disk`, [3]bool{true, false, false}},
		{`disk.size <= 256u * MiB || system_disk`, [3]bool{false, true, true}},
		{`(disk.transport == "virtio") && !(disk.size > 1u * GiB)`, [3]bool{false, true, false}},
		{`disk.model.startsWith("Samsung") && disk.model.contains("980") && disk.model.endsWith("980")`, [3]bool{true, false, false}},
		{`glob("/pci0000:00/*", disk.bus_path)`, [3]bool{true, false, false}},
		{`disk.dev_path.matches("^/dev/vd[a-z]$")`, [3]bool{false, true, true}},
		{`"/dev/disk/by-id/nvme-x" in disk.symlinks`, [3]bool{true, false, false}},
		{`disk.dev_path != '/dev/vda' && true`, [3]bool{true, true, false}},
		{`int(disk.size / 1u) > 0`, [3]bool{}}, // refused below: no division
	} {
		e, err := diskexpr.Parse(tc.expr)
		if tc.expr == `int(disk.size / 1u) > 0` {
			if err == nil {
				t.Errorf("%s parsed", tc.expr)
			}

			continue
		}

		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)

			continue
		}

		for i, env := range []diskexpr.Env{nvme, vdb, vda} {
			got, err := e.Match(env)
			if err != nil || got != tc.want[i] {
				t.Errorf("%s on %s: %v, %v; want %v", tc.expr, env.Disk.DevPath, got, err, tc.want[i])
			}
		}
	}
}

// TestParseRefuses: what CEL refuses (types) and what talosbox does not
// read are refused with what to write.
func TestParseRefuses(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ expr, want string }{
		{``, "the expression is empty"},
		{`disk.size > 100 * GiB`, `at 17: * multiplies numbers of one type, not int and uint (disk sizes and the size units are uint: write 100u, not 100, as in disk.size >= 100u * GiB)`},
		{`disk.size == 4096`, `at 11: == compares values of one type, not uint and int (disk sizes and the size units are uint: write 100u, not 100, as in disk.size >= 100u * GiB)`},
		{`disk.size > 100`, `at 11: > compares values of one type, not uint and int (disk sizes and the size units are uint: write 100u, not 100, as in disk.size >= 100u * GiB)`},
		{`disk.size >= u64(10) * GiB`, `at 14: u64() is not a function talosbox reads (glob, uint, int): CEL converts with uint(...), or write a uint literal, 100u`},
		{`disk.transport`, `the expression is a string, not a bool: a disk selector says whether a disk matches`},
		{`disk.kind == "ssd"`, `at 6: disk has no field "kind" (it has bus_path, cdrom, dev_path, firmware_version, io_size, modalias, model, pretty_size, readonly, rotational, secondary_disks, sector_size, serial, size, sub_system, symlinks, transport, uuid, wwid)`},
		{`disks.size > 1u`, `at 1: undeclared reference to "disks" (an expression reads disk.<field>, system_disk and the size units KiB ... EiB, kB ... EB)`},
		{`disk == "x"`, `at 6: disk is a message: select one of its fields (disk.size, disk.transport, ...)`},
		{`disk.dev_path == "/dev/sda`, `at 18: a string is not closed`},
		{`!disk.size`, `at 1: ! negates a bool, not a uint`},
		{`disk.rotational && disk.size`, `at 17: && joins bools, not bool and uint`},
		{`disk.size > 1u)`, `at 15: unexpected ")"`},
		{`disk.symlinks.exists(s, s == "x")`, `at 15: exists() is not a method talosbox reads (startsWith, endsWith, contains, matches)`},
		{`disk.size > "big"`, `at 11: > compares values of one type, not uint and string`},
		{`disk.size > `, `the expression ends too early`},
		{`(disk.rotational`, `at 17: want ")", got the end`},
		{`disk.size @ 1`, `at 11: unexpected character '@'`},
		{`disk.model.size() > 1`, `at 12: size() is not a method talosbox reads (startsWith, endsWith, contains, matches)`},
		{`disk.model.matches("(")`, "at 12: matches(): error parsing regexp: missing closing ): `(`"},
		{`disk.rotational ? true : false`, `at 17: talosbox does not evaluate the conditional ? : in a disk selector; it reads ` + diskexpr.Supported},
		{`disk.size > 1u + 1u`, `at 16: talosbox does not evaluate + (addition) in a disk selector; it reads ` + diskexpr.Supported},
		{`disk.symlinks[0] == "x"`, `at 14: talosbox does not evaluate CEL's indexing in a disk selector (test a list with in: "x" in disk.symlinks)`},
		{`disk.transport in ["nvme", 1]`, `at 19: a list here holds strings, not ints`},
		{`disk.size > 0o17u`, `at 13: invalid number "0o17u" (CEL's numbers here are decimal or hex, 0x1F, with u for a uint)`},
		{`disk.size > 1_000u`, `at 13: invalid number "1_000u" (CEL's numbers here are decimal or hex, 0x1F, with u for a uint)`},
		{`disk.model == "\q"`, `at 15: unsupported escape \q in a string`},
		{`disk.model == "\x4"`, `at 15: invalid escape \x4" in a string`},
		{`disk.model == "\ud800"`, `at 15: invalid escape \ud800 in a string`},
	} {
		if _, err := diskexpr.Parse(tc.expr); err == nil || err.Error() != tc.want {
			t.Errorf("%q:\ngot  %v\nwant %s", tc.expr, err, tc.want)
		}
	}
}

func TestMatchOverflow(t *testing.T) {
	t.Parallel()

	e, err := diskexpr.Parse(`disk.size > 100000u * EB`)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := e.Match(vdb); err == nil || err.Error() != "disk.size > 100000u * EB: uint overflow" {
		t.Errorf("overflow: %v", err)
	}
}

// disks for the forms below: what each property and operator tells apart.
var (
	sda = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/sda", Transport: "sata", Size: 2e12, Rotational: true, Model: "QEMU HARDDISK",
		WWID: "naa.5002538", BusPath: "/pci0000:00/0000:00:05.0/virtio2", SubSystem: "/sys/class/block"}}
	nvme0 = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/nvme0n1", Transport: "nvme", Size: 512 << 30, Model: "Samsung SSD 990", Serial: "ABCX1",
		WWID: "eui.5002538e", BusPath: "/pci0000:00/0000:00:1d.0/nvme/nvme0"}}
	mmc = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/mmcblk0", Transport: "mmc", Size: 64e9, Model: "QEMU HARDDISK*"}}
	sr0 = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/sr0", Transport: "sata", Size: 4096, Readonly: true, CDROM: true}}
	sdb = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/sdb", Transport: "usb", Size: 1e12, Model: "Samsung SSD 9?0 EVO", UUID: "a", Modalias: "b"}}
	sys = diskexpr.Env{Disk: diskexpr.Disk{DevPath: "/dev/vda", Transport: "virtio", Size: 6 << 30, Rotational: true}, SystemDisk: true}
)

// TestMatchInstallForms: the forms the install disk translator read
// (talosbox's first reader of UnattendedInstallConfig, which turned them
// into machine.install.diskSelector), evaluated; then those it could not
// translate, which the evaluator reads as CEL does.
func TestMatchInstallForms(t *testing.T) {
	t.Parallel()

	envs := []diskexpr.Env{sda, nvme0, mmc, sr0, sdb, sys}

	for _, tc := range []struct {
		expr string
		want string // the matching disks' paths
	}{
		{`disk.dev_path == "/dev/vda"`, "/dev/vda"},
		{`"/dev/nvme0n1" == disk.dev_path`, "/dev/nvme0n1"},
		{`(disk.dev_path == '/dev/sda')`, "/dev/sda"},
		{`disk.size > 120u * GB`, "/dev/sda /dev/nvme0n1 /dev/sdb"},
		{`disk.size <= 2u * TiB && !disk.readonly && !disk.cdrom`, "/dev/sda /dev/nvme0n1 /dev/mmcblk0 /dev/sdb /dev/vda"},
		{`GiB * 64u < disk.size`, "/dev/sda /dev/nvme0n1 /dev/sdb"},
		{`disk.size == 4096u`, "/dev/sr0"},
		{`disk.transport == "nvme" && !system_disk`, "/dev/nvme0n1"},
		{`disk.transport == "mmc"`, "/dev/mmcblk0"},
		{`disk.rotational`, "/dev/sda /dev/vda"},
		// A string compared with == is itself, * included.
		{`disk.model == "QEMU HARDDISK*"`, "/dev/mmcblk0"},
		{`disk.model.startsWith("Samsung") && disk.serial.endsWith("X1")`, "/dev/nvme0n1"},
		{`disk.wwid.contains("5002538") && disk.bus_path == "/pci0000:00/0000:00:05.0/virtio2"`, "/dev/sda"},
		// Talos's glob reads * only: ? is itself.
		{`glob("Samsung SSD 9?0*", disk.model) && disk.uuid == "a" && disk.modalias == "b"`, "/dev/sdb"},
		{`glob("Samsung SSD 9?0*", disk.model) && disk.serial == "ABCX1"`, ""},

		// What the translator refused (no v1alpha1 selector says it).
		{`disk.size > 120u * GB && disk.size < 1u * TB`, "/dev/nvme0n1"},
		{`disk.transport == "nvme" || disk.transport == "sata"`, "/dev/sda /dev/nvme0n1 /dev/sr0"},
		{`disk.transport == "sata"`, "/dev/sda /dev/sr0"},
		{`!disk.rotational`, "/dev/nvme0n1 /dev/mmcblk0 /dev/sr0 /dev/sdb"},
		{`disk.model != "QEMU HARDDISK"`, "/dev/nvme0n1 /dev/mmcblk0 /dev/sr0 /dev/sdb /dev/vda"},
		{`disk.dev_path == "/dev/sda" && disk.size > 1u * GB`, "/dev/sda"},
		{`disk.sub_system == "/sys/class/block"`, "/dev/sda"},
		{`disk.model > "R"`, "/dev/nvme0n1 /dev/sdb"},
		{`system_disk`, "/dev/vda"},
		{`!disk.readonly`, "/dev/sda /dev/nvme0n1 /dev/mmcblk0 /dev/sdb /dev/vda"},

		// Further CEL the documents' authors write.
		{`disk.transport in ["nvme", "mmc"]`, "/dev/nvme0n1 /dev/mmcblk0"},
		{`disk.dev_path in []`, ""},
		{`disk.size >= 0x40u * GiB && disk.size < 2u * TB`, "/dev/nvme0n1 /dev/sdb"},
		{`uint(017) == 17u && 0x11u == 17u`, "/dev/sda /dev/nvme0n1 /dev/mmcblk0 /dev/sr0 /dev/sdb /dev/vda"}, // 017 is seventeen, as in CEL
		{`disk.model == r"QEMU HARDDISK*" || disk.model == "Samsung SSD 9\x3f0 EVO"`, "/dev/mmcblk0 /dev/sdb"},
		{`disk.model == 'Samsung\u0020SSD\0409\?0 EVO'`, "/dev/sdb"},
		{`disk.model.matches(disk.serial)`, "/dev/sda /dev/mmcblk0 /dev/sr0 /dev/sdb /dev/vda"}, // an empty pattern matches
	} {
		e, err := diskexpr.Parse(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)

			continue
		}

		var got []string

		for _, env := range envs {
			ok, err := e.Match(env)
			if err != nil {
				t.Fatalf("%s on %s: %v", tc.expr, env.Disk.DevPath, err)
			}

			if ok {
				got = append(got, env.Disk.DevPath)
			}
		}

		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s matches %q, want %q", tc.expr, g, tc.want)
		}
	}
}

// TestMatchError: an error found only on a disk (a pattern read from the
// disk) is the evaluation's.
func TestMatchError(t *testing.T) {
	t.Parallel()

	e, err := diskexpr.Parse(`disk.model.matches(disk.serial)`)
	if err != nil {
		t.Fatal(err)
	}

	bad := diskexpr.Env{Disk: diskexpr.Disk{Serial: "("}}
	if _, err := e.Match(bad); err == nil || err.Error() != "disk.model.matches(disk.serial): matches(): error parsing regexp: missing closing ): `(`" {
		t.Errorf("err = %v", err)
	}
}

// TestDecided: what the expression says of the system disk, and of any
// other, before any disk is seen.
func TestDecided(t *testing.T) {
	t.Parallel()

	const unknown = "?"

	for _, tc := range []struct {
		expr              string
		onSystem, onOther string // true, false or ?
	}{
		{`system_disk`, "true", "false"},
		{`!system_disk`, "false", "true"},
		{`disk.transport == "nvme" && !system_disk`, "false", unknown},
		{`!system_disk && disk.transport == "nvme"`, "false", unknown},
		{`system_disk || disk.rotational`, "true", unknown},
		{`disk.rotational || system_disk`, "true", unknown},
		{`disk.rotational && system_disk`, unknown, "false"},
		{`disk.size > 100000u * EB || system_disk`, "true", unknown}, // the overflow is only seen on a disk
		{`disk.transport == "nvme"`, unknown, unknown},
		{`false`, "false", "false"},
		{`!(true && !system_disk)`, "true", "false"},
	} {
		e, err := diskexpr.Parse(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}

		for _, c := range []struct {
			system bool
			want   string
		}{{true, tc.onSystem}, {false, tc.onOther}} {
			got := unknown
			if v, known := e.Decided(c.system); known {
				got = strconv.FormatBool(v)
			}

			if got != c.want {
				t.Errorf("%s decided with system_disk %v: %s, want %s", tc.expr, c.system, got, c.want)
			}
		}
	}
}

// TestEquality: the expressions that name one disk by a field.
func TestEquality(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ expr, field, value string }{
		{`disk.dev_path == "/dev/sda"`, "dev_path", "/dev/sda"},
		{`"/dev/nvme0n1" == disk.dev_path`, "dev_path", "/dev/nvme0n1"},
		{`((disk.serial == 'S1'))`, "serial", "S1"},
		{`disk.dev_path != "/dev/sda"`, "", ""},
		{`disk.dev_path == "/dev/sda" && !system_disk`, "", ""},
		{`disk.dev_path == disk.model`, "", ""},
		{`"a" == "a"`, "", ""},
		{`disk.size == 1u`, "", ""},
	} {
		e, err := diskexpr.Parse(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}

		field, value, ok := e.Equality()
		if field != tc.field || value != tc.value || ok != (tc.field != "") {
			t.Errorf("%s: Equality = %q, %q, %v; want %q, %q", tc.expr, field, value, ok, tc.field, tc.value)
		}
	}
}
