package diskexpr_test

import (
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
		{`disk.model.size() > 1`, `at 12: size() is not a method talosbox reads (startsWith, endsWith, contains, matches)`},
		{`disk.model.matches("(")`, "at 12: matches(): error parsing regexp: missing closing ): `(`"},
		{`disk.rotational ? true : false`, `at 17: unexpected "?"`},
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
