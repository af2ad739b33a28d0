package disk

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/dustin/go-humanize"
)

// Selector is machine.install.diskSelector: every field set must match.
// Name, Model, Serial, Modalias, UUID, WWID and BusPath are globs (*, ?,
// [...]; * crosses / too, so "/pci0000:00/*" takes a whole bus); Size is a size with an optional comparison
// ("4GB", "> 1TB", "<= 2TB"); Type is ssd, hdd, nvme or sd.
type Selector struct {
	Size, Name, Model, Serial, Modalias, UUID, WWID, Type, BusPath string
}

// IsZero says the selector sets nothing.
func (s Selector) IsZero() bool { return s == Selector{} }

// sizeOps are the comparisons Talos's size matcher knows.
var sizeOps = []string{">=", "<=", "==", ">", "<"}

// sizeMatcher parses "op size". A bare size matches equal sizes, as in
// Talos; human sizes are taken as written, decimal or binary ("1TB",
// "1TiB").
func sizeMatcher(s string) (func(int64) bool, error) {
	s = strings.TrimSpace(s)
	op := "=="

	for _, o := range sizeOps {
		if strings.HasPrefix(s, o) {
			op, s = o, strings.TrimSpace(s[len(o):])
			break
		}
	}

	want, err := humanize.ParseBytes(s)
	if err != nil {
		return nil, fmt.Errorf("size %q: %w", s, err)
	}

	w := int64(want)

	return map[string]func(int64) bool{
		"==": func(n int64) bool { return n == w },
		">":  func(n int64) bool { return n > w },
		">=": func(n int64) bool { return n >= w },
		"<":  func(n int64) bool { return n < w },
		"<=": func(n int64) bool { return n <= w },
	}[op], nil
}

// Type is how a selector classifies a disk: nvme and sd (SD/MMC cards) by
// their kernel names, otherwise ssd or hdd by the rotational flag.
func (b BlockDevice) Type() string {
	switch {
	case strings.HasPrefix(b.Name, "nvme"):
		return "nvme"
	case strings.HasPrefix(b.Name, "mmcblk"):
		return "sd"
	case b.Rotational:
		return "hdd"
	default:
		return "ssd"
	}
}

// Match says whether the disk is what s selects; the error is a bad
// selector (a size or a glob that does not parse), not a mismatch.
func (s Selector) Match(d BlockDevice) (bool, error) {
	if s.Size != "" {
		m, err := sizeMatcher(s.Size)
		if err != nil {
			return false, err
		}

		if !m(d.Size) {
			return false, nil
		}
	}

	if s.Type != "" && !strings.EqualFold(s.Type, d.Type()) {
		return false, nil
	}

	for _, g := range []struct{ field, pattern, value string }{
		{"name", s.Name, d.DeviceName},
		{"model", s.Model, d.Model},
		{"serial", s.Serial, d.Serial},
		{"modalias", s.Modalias, d.Modalias},
		{"uuid", s.UUID, d.UUID},
		{"wwid", s.WWID, d.WWID},
		{"busPath", s.BusPath, d.BusPath},
	} {
		if g.pattern == "" {
			continue
		}

		ok, err := globMatch(g.pattern, g.value)
		if err != nil {
			return false, fmt.Errorf("%s %q: %w", g.field, g.pattern, err)
		}

		if !ok {
			return false, nil
		}
	}

	return true, nil
}

// String is the selector as an error message shows it.
func (s Selector) String() string {
	var parts []string

	for _, f := range []struct{ k, v string }{
		{"size", s.Size}, {"name", s.Name}, {"model", s.Model}, {"serial", s.Serial}, {"modalias", s.Modalias},
		{"uuid", s.UUID}, {"wwid", s.WWID}, {"type", s.Type}, {"busPath", s.BusPath},
	} {
		if f.v != "" {
			parts = append(parts, fmt.Sprintf("%s: %q", f.k, f.v))
		}
	}

	return "{" + strings.Join(parts, ", ") + "}"
}

// SelectDisk is the first disk (by name) that s matches.
func SelectDisk(devs []BlockDevice, s Selector) (BlockDevice, error) {
	disks := Disks(devs)

	for _, d := range disks {
		ok, err := s.Match(d)
		if err != nil {
			return BlockDevice{}, fmt.Errorf("machine.install.diskSelector: %w", err)
		}

		if ok {
			return d, nil
		}
	}

	var seen []string
	for _, d := range disks {
		seen = append(seen, d.Summary())
	}

	if len(seen) == 0 {
		seen = []string{"none"}
	}

	return BlockDevice{}, fmt.Errorf("machine.install.diskSelector %s matches no disk here (disks: %s)", s, strings.Join(seen, "; "))
}

// Summary describes a disk with what a selector can match on.
func (b BlockDevice) Summary() string {
	parts := []string{b.Path, humanize.Bytes(uint64(b.Size)), b.Type()}

	for _, f := range []struct{ k, v string }{{"model", b.Model}, {"serial", b.Serial}, {"wwid", b.WWID}, {"busPath", b.BusPath}} {
		if f.v != "" {
			parts = append(parts, fmt.Sprintf("%s %q", f.k, f.v))
		}
	}

	return strings.Join(parts, " ")
}

// globMatch is path.Match with * and ? matching / as well.
func globMatch(pattern, s string) (bool, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return false, err
	}

	var re strings.Builder

	re.WriteString("^")

	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		case '\\':
			if i+1 < len(pattern) {
				i++
				re.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
			}
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']') + i + 1
			class := pattern[i+1 : end] // path.Match's classes are regexp's: ranges, ^ negation

			re.WriteString("[" + class + "]")
			i = end
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}

	re.WriteString("$")

	return regexp.MatchString(re.String(), s)
}
