package configs

import (
	"errors"
	"fmt"
	"strings"
)

// Talos's typed documents choose disks with a CEL expression over the
// disk (`disk.dev_path == "/dev/sda"`, `disk.size > 120u * GB &&
// !disk.rotational`). talosbox's disk selector is machine.install's: a
// disk path, or globs on a few properties and one size comparison, all
// of which must match. DiskMatch reads the common forms of the CEL
// expression and says what the v1alpha1 install fields are; any other
// form is refused with what talosbox can read instead.

// DiskMatch is a disk selector written as a CEL expression.
type DiskMatch struct {
	Match string `yaml:"match,omitempty"`
}

// diskMatchForms says, in a message, what talosbox reads.
const diskMatchForms = `conditions joined with &&: disk.dev_path == "/dev/sda" (alone); ` +
	`disk.model, disk.serial, disk.modalias, disk.uuid, disk.wwid or disk.bus_path compared with == to a string, ` +
	`or with .startsWith(), .endsWith(), .contains() or glob(); one disk.size comparison (disk.size >= 120u * GB); ` +
	`disk.transport == "nvme" or "mmc"; disk.rotational; !disk.readonly, !disk.cdrom, !system_disk`

// installTarget translates a disk CEL expression into machine.install's
// disk (a device path) or diskSelector: exactly one is set.
func installTarget(expr string) (string, *InstallDiskSelector, error) {
	if strings.TrimSpace(expr) == "" {
		return "", nil, errors.New("the expression is empty")
	}

	n, err := parseCEL(expr)
	if err != nil {
		return "", nil, fmt.Errorf("cannot read %q: %w", expr, err)
	}

	var (
		devPath string
		sel     InstallDiskSelector
		set     = map[string]bool{}
	)

	for _, term := range conjuncts(n) {
		if err := translateTerm(term, &devPath, &sel, set); err != nil {
			return "", nil, fmt.Errorf("cannot translate %q into talosbox's install disk selector: %w; talosbox reads %s", expr, err, diskMatchForms)
		}
	}

	switch {
	case devPath != "" && sel != (InstallDiskSelector{}):
		return "", nil, fmt.Errorf("cannot translate %q into talosbox's install disk selector: disk.dev_path cannot be combined with "+
			"conditions on the disk's properties (talosbox installs to the disk a path names, or to the one a selector picks)", expr)
	case devPath != "":
		return devPath, nil, nil
	case sel == (InstallDiskSelector{}):
		return "", nil, fmt.Errorf("%q sets no condition talosbox can select a disk by; talosbox reads %s", expr, diskMatchForms)
	}

	return "", &sel, nil
}

// conjuncts flattens a && b && c.
func conjuncts(n celNode) []celNode {
	if n.kind == celBinary && n.op == "&&" {
		return append(conjuncts(n.args[0]), conjuncts(n.args[1])...)
	}

	return []celNode{n}
}

// diskGlobFields are the disk's string properties and the selector field
// each one is.
var diskGlobFields = map[string]func(*InstallDiskSelector) *string{
	"model":    func(s *InstallDiskSelector) *string { return &s.Model },
	"serial":   func(s *InstallDiskSelector) *string { return &s.Serial },
	"modalias": func(s *InstallDiskSelector) *string { return &s.Modalias },
	"uuid":     func(s *InstallDiskSelector) *string { return &s.UUID },
	"wwid":     func(s *InstallDiskSelector) *string { return &s.WWID },
	"bus_path": func(s *InstallDiskSelector) *string { return &s.BusPath },
}

// installAlwaysTrue are conditions every disk talosbox installs to meets: it
// only installs to writable disks, never to a CD, and before an install
// there is no system disk.
var installAlwaysTrue = map[string]bool{"!disk.readonly": true, "!disk.cdrom": true, "!system_disk": true}

//nolint:gocyclo // one case per form read
func translateTerm(n celNode, devPath *string, sel *InstallDiskSelector, set map[string]bool) error {
	once := func(what string) error {
		if set[what] {
			return fmt.Errorf("%s is compared twice: talosbox's disk selector holds one condition on it", what)
		}

		set[what] = true

		return nil
	}

	if installAlwaysTrue[n.String()] {
		return nil
	}

	switch {
	case n.String() == "!disk.rotational":
		return errors.New(`!disk.rotational: talosbox's disk selector picks one disk type (ssd, hdd, nvme or sd), and non-rotational disks are ` +
			`ssd, nvme or sd disks; write disk.transport == "nvme" for NVMe disks`)
	case n.kind == celIdent && n.name == "disk.rotational":
		if err := once("the disk type"); err != nil {
			return err
		}

		sel.Type = "hdd"

		return nil
	case n.kind == celBinary && (n.op == "==" || n.op == "<" || n.op == "<=" || n.op == ">" || n.op == ">="):
		return translateComparison(n, devPath, sel, once)
	case n.kind == celCall:
		return translateStringCall(n, sel, once)
	}

	return fmt.Errorf("%s is not a condition talosbox reads", n)
}

func translateComparison(n celNode, devPath *string, sel *InstallDiskSelector, once func(string) error) error {
	l, r, op := n.args[0], n.args[1], n.op

	// 120u * GB < disk.size reads as disk.size > 120u * GB.
	if r.kind == celIdent && strings.HasPrefix(r.name, "disk.") {
		l, r, op = r, l, flipComparison(op)
	}

	if l.kind != celIdent || !strings.HasPrefix(l.name, "disk.") {
		return fmt.Errorf("%s compares no disk property", n)
	}

	field := strings.TrimPrefix(l.name, "disk.")

	if field == "size" {
		size, err := r.byteSize()
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}

		if err := once("disk.size"); err != nil {
			return err
		}

		sel.Size = op + " " + size

		return nil
	}

	if op != "==" {
		return fmt.Errorf("%s: only disk.size is compared with %s", n, op)
	}

	if r.kind != celString {
		return fmt.Errorf("%s: disk.%s is compared with a string", n, field)
	}

	switch field {
	case "dev_path":
		if err := once("disk.dev_path"); err != nil {
			return err
		}

		*devPath = r.name

		return nil
	case "transport":
		if err := once("the disk type"); err != nil {
			return err
		}

		switch r.name {
		case "nvme":
			sel.Type = "nvme"
		case "mmc":
			sel.Type = "sd"
		default:
			return fmt.Errorf(`%s: talosbox's disk selector tells disks apart by type (nvme, sd, ssd or hdd), not by the %q transport`, n, r.name)
		}

		return nil
	}

	ptr, ok := diskGlobFields[field]
	if !ok {
		return fmt.Errorf("%s: talosbox's disk selector has no condition on disk.%s", n, field)
	}

	if err := once("disk." + field); err != nil {
		return err
	}

	*ptr(sel) = escapeGlob(r.name)

	return nil
}

// translateStringCall reads disk.model.startsWith("x"), .endsWith,
// .contains and glob("pattern", disk.model) as globs.
func translateStringCall(n celNode, sel *InstallDiskSelector, once func(string) error) error {
	var (
		field, pattern string
	)

	switch {
	case n.name == "glob" && len(n.args) == 2 && n.args[0].kind == celString && n.args[1].kind == celIdent:
		// Talos's glob matches * only; the selector's globs read ? and
		// [...] too, so those are escaped.
		field, pattern = n.args[1].name, strings.ReplaceAll(escapeGlob(n.args[0].name), `\*`, "*")
	case len(n.args) == 2 && n.args[0].kind == celIdent && n.args[1].kind == celString:
		field = n.args[0].name
		s := escapeGlob(n.args[1].name)

		switch n.name {
		case "startsWith":
			pattern = s + "*"
		case "endsWith":
			pattern = "*" + s
		case "contains":
			pattern = "*" + s + "*"
		default:
			return fmt.Errorf("%s: talosbox does not read the %s() function", n, n.name)
		}
	default:
		return fmt.Errorf("%s is not a condition talosbox reads", n)
	}

	name, ok := strings.CutPrefix(field, "disk.")

	ptr, known := diskGlobFields[name]
	if !ok || !known {
		return fmt.Errorf("%s: talosbox's disk selector matches patterns on disk.model, disk.serial, disk.modalias, disk.uuid, disk.wwid and disk.bus_path only", n)
	}

	if err := once(field); err != nil {
		return err
	}

	*ptr(sel) = pattern

	return nil
}

func flipComparison(op string) string {
	return map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}[op]
}

// escapeGlob makes s match only itself as a selector glob.
func escapeGlob(s string) string {
	var b strings.Builder

	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}

		b.WriteRune(r)
	}

	return b.String()
}

// byteSize reads a size operand: 120u * GB, GB * 120u, 4096u, 4096.
func (n celNode) byteSize() (string, error) {
	switch {
	case n.kind == celNumber:
		return n.name, nil
	case n.kind == celBinary && n.op == "*":
		num, unit := n.args[0], n.args[1]
		if num.kind == celIdent {
			num, unit = unit, num
		}

		if num.kind == celNumber && unit.kind == celIdent && celUnits[unit.name] {
			return num.name + unit.name, nil
		}
	}

	return "", fmt.Errorf("disk.size is compared with a number of bytes, such as 120u * GB or 4096, not %s", n)
}

// celUnits are the size constants of Talos's disk CEL environment.
var celUnits = map[string]bool{
	"KiB": true, "MiB": true, "GiB": true, "TiB": true, "PiB": true, "EiB": true,
	"kB": true, "MB": true, "GB": true, "TB": true, "PB": true, "EB": true,
}
