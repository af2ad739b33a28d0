package configs

import (
	"strings"

	"github.com/talosbox/talosbox/configs/diskexpr"
)

// Talos's typed documents choose disks with a CEL expression over a disk
// (`disk.dev_path == "/dev/sda"`, `disk.size > 120u * GB &&
// !disk.rotational`, `!system_disk`). talosbox reads it with one reader,
// configs/diskexpr, and the node evaluates it against its disks: the
// install disk (UnattendedInstallConfig), EPHEMERAL's disk, checked at
// install (VolumeConfig), and a user volume's (UserVolumeConfig).

// DiskMatch is a disk selector written as a CEL expression.
type DiskMatch struct {
	Match string `yaml:"match,omitempty"`
}

func (d *DiskMatch) empty() bool { return d == nil || strings.TrimSpace(d.Match) == "" }

// Expr is the parsed expression, nil when none is written.
func (d *DiskMatch) Expr() (*diskexpr.Expr, error) {
	if d.empty() {
		return nil, nil
	}

	return diskexpr.Parse(d.Match)
}

// checkDiskMatch reports, at path, an expression the node cannot
// evaluate; the expression when it can, nil when there is none.
func checkDiskMatch(report func(path, format string, args ...any), path string, d *DiskMatch) *diskexpr.Expr {
	e, err := d.Expr()
	if err != nil {
		report(path, "disk selector is invalid: %v", err)

		return nil
	}

	return e
}
