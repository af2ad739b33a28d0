package diskexpr

import (
	"errors"
	"fmt"
	"strings"
)

// Disk is what an expression sees of a disk: the fields of Talos's
// DiskSpec, by their CEL names.
type Disk struct {
	DevPath, Model, Serial, Modalias, WWID, UUID, BusPath, SubSystem, Transport, PrettySize, FirmwareVersion string
	Size, IOSize, SectorSize                                                                                 uint64
	Readonly, Rotational, CDROM                                                                              bool
	Symlinks, SecondaryDisks                                                                                 []string
}

// Env is one evaluation: the disk, and whether it is the system disk.
type Env struct {
	Disk       Disk
	SystemDisk bool

	// partial leaves the disk's fields unknown (Decided).
	partial bool
}

// Expr is a parsed disk selector.
type Expr struct {
	src  string
	root *node
}

// String is the expression as written.
func (e *Expr) String() string { return e.src }

// Supported says, for messages, what an expression may be built of.
const Supported = `disk.<field> (dev_path, model, serial, wwid, uuid, modalias, bus_path, transport, size, rotational, readonly, cdrom, ...), ` +
	`system_disk, the size units KiB ... EiB and kB ... EB (uint), string, int and uint (100u) literals, lists of strings, ` +
	`! && || == != < <= > >= in *, parentheses, uint(), int(), glob(pattern, s) and a string's startsWith, endsWith, contains and matches`

// Parse reads a disk selector; it must be a boolean expression.
func Parse(s string) (*Expr, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("the expression is empty")
	}

	toks, err := lex(s)
	if err != nil {
		return nil, err
	}

	p := &parser{toks: toks}

	n, err := p.or()
	if err != nil {
		return nil, err
	}

	if t := p.peek(); t.kind != tokEOF {
		return nil, unexpected(t)
	}

	if n.typ != typBool {
		return nil, fmt.Errorf("the expression is a %s, not a bool: a disk selector says whether a disk matches", n.typ)
	}

	return &Expr{src: s, root: n}, nil
}

// Match evaluates the expression for env.
func (e *Expr) Match(env Env) (bool, error) {
	env.partial = false

	v, err := e.root.eval(env)
	if err != nil {
		return false, fmt.Errorf("%s: %w", e.src, err)
	}

	return v.(bool), nil //nolint:forcetypeassert // typed by Parse
}

// Decided evaluates the expression knowing only whether the disk is the
// system disk: known is true when that alone decides it, whatever the
// disk's fields (`!system_disk` on the system disk, `false`,
// `system_disk || disk.rotational` on it). It lets a config be judged
// before any disk is seen.
func (e *Expr) Decided(systemDisk bool) (value, known bool) {
	v, err := e.root.eval(Env{SystemDisk: systemDisk, partial: true})
	if err != nil {
		return false, false
	}

	return v.(bool), true //nolint:forcetypeassert // typed by Parse
}

// Equality is the field and the string when the whole expression is one
// comparison of a disk field with a string literal, as in
// disk.dev_path == "/dev/sda" (or with the operands the other way
// round, or in parentheses): a selector that names one disk.
func (e *Expr) Equality() (field, value string, ok bool) {
	if eq := e.root.equality; eq != nil {
		return eq.field, eq.value, true
	}

	return "", "", false
}

// errUnknown is what a field reads as in a partial evaluation.
var errUnknown = errors.New("the disk's fields are not known")

type typ int

const (
	typBool typ = iota
	typInt
	typUint
	typString
	typList
	typDisk
)

func (t typ) String() string {
	return [...]string{"bool", "int", "uint", "string", "list(string)", "disk"}[t]
}

// node is a typed expression; eval computes its value (bool, int64,
// uint64, string, []string).
type node struct {
	typ  typ
	eval func(Env) (any, error)

	// konst marks a literal (its value needs no Env); field names the
	// disk field the node reads, when it is one; equality is set on
	// disk.<field> == "<string>".
	konst    bool
	field    string
	equality *fieldEquality
}

type fieldEquality struct{ field, value string }

func constant(t typ, v any) *node {
	return &node{typ: t, konst: true, eval: func(Env) (any, error) { return v, nil }}
}

// units are the size constants of Talos's environment.
var units = map[string]uint64{
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60,
	"kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15, "EB": 1e18,
}

// fields are the disk's fields and how to read them.
var fields = map[string]struct {
	typ typ
	get func(Disk) any
}{
	"dev_path":         {typString, func(d Disk) any { return d.DevPath }},
	"model":            {typString, func(d Disk) any { return d.Model }},
	"serial":           {typString, func(d Disk) any { return d.Serial }},
	"modalias":         {typString, func(d Disk) any { return d.Modalias }},
	"wwid":             {typString, func(d Disk) any { return d.WWID }},
	"uuid":             {typString, func(d Disk) any { return d.UUID }},
	"bus_path":         {typString, func(d Disk) any { return d.BusPath }},
	"sub_system":       {typString, func(d Disk) any { return d.SubSystem }},
	"transport":        {typString, func(d Disk) any { return d.Transport }},
	"pretty_size":      {typString, func(d Disk) any { return d.PrettySize }},
	"firmware_version": {typString, func(d Disk) any { return d.FirmwareVersion }},
	"size":             {typUint, func(d Disk) any { return d.Size }},
	"io_size":          {typUint, func(d Disk) any { return d.IOSize }},
	"sector_size":      {typUint, func(d Disk) any { return d.SectorSize }},
	"readonly":         {typBool, func(d Disk) any { return d.Readonly }},
	"rotational":       {typBool, func(d Disk) any { return d.Rotational }},
	"cdrom":            {typBool, func(d Disk) any { return d.CDROM }},
	"symlinks":         {typList, func(d Disk) any { return d.Symlinks }},
	"secondary_disks":  {typList, func(d Disk) any { return d.SecondaryDisks }},
}

func fieldNode(name string) *node {
	f := fields[name]

	return &node{typ: f.typ, field: name, eval: func(env Env) (any, error) {
		if env.partial {
			return nil, errUnknown
		}

		return f.get(env.Disk), nil
	}}
}

// Glob matches s against pattern, where * stands for any run of
// characters (/ included) and everything else for itself, as the glob()
// of Talos's environment does.
func Glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}

	if !strings.HasPrefix(s, parts[0]) {
		return false
	}

	s = s[len(parts[0]):]

	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}

		s = s[i+len(mid):]
	}

	return strings.HasSuffix(s, parts[len(parts)-1])
}
