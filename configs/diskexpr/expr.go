package diskexpr

import (
	"errors"
	"fmt"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
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
}

// Expr is a parsed disk selector.
type Expr struct {
	src  string
	root *node
}

// String is the expression as written.
func (e *Expr) String() string { return e.src }

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
		return nil, fmt.Errorf("at %d: unexpected %q", t.pos+1, t.text)
	}

	if n.typ != typBool {
		return nil, fmt.Errorf("the expression is a %s, not a bool: a disk selector says whether a disk matches", n.typ)
	}

	return &Expr{src: s, root: n}, nil
}

// Match evaluates the expression for env.
func (e *Expr) Match(env Env) (bool, error) {
	v, err := e.root.eval(env)
	if err != nil {
		return false, fmt.Errorf("%s: %w", e.src, err)
	}

	return v.(bool), nil //nolint:forcetypeassert // typed by Parse
}

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
}

func constant(t typ, v any) *node {
	return &node{typ: t, eval: func(Env) (any, error) { return v, nil }}
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

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}

	return t
}

func (p *parser) accept(op string) bool {
	if t := p.peek(); t.kind == tokOp && t.text == op {
		p.i++

		return true
	}

	return false
}

func (p *parser) expect(op string) error {
	if !p.accept(op) {
		t := p.peek()

		return fmt.Errorf("at %d: want %q, got %s", t.pos+1, op, describe(t))
	}

	return nil
}

func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "the end"
	case tokString:
		return strconv.Quote(t.text)
	}

	return fmt.Sprintf("%q", t.text)
}

func (p *parser) or() (*node, error)  { return p.logical("||", p.and) }
func (p *parser) and() (*node, error) { return p.logical("&&", p.relation) }

func (p *parser) logical(op string, operand func() (*node, error)) (*node, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}

	for {
		t := p.peek()
		if !p.accept(op) {
			return l, nil
		}

		r, err := operand()
		if err != nil {
			return nil, err
		}

		if l.typ != typBool || r.typ != typBool {
			return nil, fmt.Errorf("at %d: %s joins bools, not %s and %s", t.pos+1, op, l.typ, r.typ)
		}

		l = logicalNode(op, l, r)
	}
}

func logicalNode(op string, l, r *node) *node {
	return &node{typ: typBool, eval: func(env Env) (any, error) {
		a, err := l.eval(env)
		if err != nil {
			return nil, err
		}

		if a.(bool) == (op == "||") { //nolint:forcetypeassert // typed
			return a, nil
		}

		return r.eval(env)
	}}
}

var relations = []string{"==", "!=", "<=", ">=", "<", ">", "in"}

func (p *parser) relation() (*node, error) {
	l, err := p.product()
	if err != nil {
		return nil, err
	}

	t := p.peek()

	op := ""
	if (t.kind == tokOp || t.kind == tokIdent) && slices.Contains(relations, t.text) {
		op = t.text
		p.next()
	}

	if op == "" {
		return l, nil
	}

	r, err := p.product()
	if err != nil {
		return nil, err
	}

	return compare(t.pos, op, l, r)
}

func compare(pos int, op string, l, r *node) (*node, error) {
	if op == "in" {
		if l.typ != typString || r.typ != typList {
			return nil, fmt.Errorf("at %d: in tests a string against a list, not %s in %s", pos+1, l.typ, r.typ)
		}

		return &node{typ: typBool, eval: func(env Env) (any, error) {
			a, b, err := both(env, l, r)
			if err != nil {
				return nil, err
			}

			return slices.Contains(b.([]string), a.(string)), nil //nolint:forcetypeassert // typed
		}}, nil
	}

	if l.typ != r.typ {
		return nil, fmt.Errorf("at %d: %s compares values of one type, not %s and %s%s", pos+1, op, l.typ, r.typ, numberHint(l, r))
	}

	ordered := op != "==" && op != "!="
	if ordered && l.typ != typInt && l.typ != typUint && l.typ != typString {
		return nil, fmt.Errorf("at %d: %s orders numbers and strings, not %ss", pos+1, op, l.typ)
	}

	if !ordered && l.typ == typList {
		return nil, fmt.Errorf("at %d: %s compares lists only with in", pos+1, op)
	}

	return &node{typ: typBool, eval: func(env Env) (any, error) {
		a, b, err := both(env, l, r)
		if err != nil {
			return nil, err
		}

		c := 0

		switch av := a.(type) {
		case bool:
			if av != b.(bool) { //nolint:forcetypeassert // typed
				c = 1
			}
		case int64:
			c = cmpOrdered(av, b.(int64)) //nolint:forcetypeassert // typed
		case uint64:
			c = cmpOrdered(av, b.(uint64)) //nolint:forcetypeassert // typed
		case string:
			c = strings.Compare(av, b.(string)) //nolint:forcetypeassert // typed
		}

		return map[string]bool{"==": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op], nil
	}}, nil
}

func cmpOrdered[T int64 | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}

	return 0
}

// numberHint helps with CEL's strictness about int and uint.
func numberHint(l, r *node) string {
	if (l.typ == typInt && r.typ == typUint) || (l.typ == typUint && r.typ == typInt) {
		return ` (disk sizes and the size units are uint: write 100u, not 100, as in disk.size >= 100u * GiB)`
	}

	return ""
}

func both(env Env, l, r *node) (any, any, error) {
	a, err := l.eval(env)
	if err != nil {
		return nil, nil, err
	}

	b, err := r.eval(env)

	return a, b, err
}

func (p *parser) product() (*node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}

	for {
		t := p.peek()
		if !p.accept("*") {
			return l, nil
		}

		r, err := p.unary()
		if err != nil {
			return nil, err
		}

		if l.typ != r.typ || (l.typ != typInt && l.typ != typUint) {
			return nil, fmt.Errorf("at %d: * multiplies numbers of one type, not %s and %s%s", t.pos+1, l.typ, r.typ, numberHint(l, r))
		}

		l = multiply(l, r)
	}
}

func multiply(l, r *node) *node {
	return &node{typ: l.typ, eval: func(env Env) (any, error) {
		a, b, err := both(env, l, r)
		if err != nil {
			return nil, err
		}

		if av, ok := a.(uint64); ok {
			hi, lo := bits.Mul64(av, b.(uint64)) //nolint:forcetypeassert // typed
			if hi != 0 {
				return nil, errors.New("uint overflow")
			}

			return lo, nil
		}

		av, bv := a.(int64), b.(int64) //nolint:forcetypeassert // typed
		if av != 0 && (av*bv)/av != bv {
			return nil, errors.New("int overflow")
		}

		return av * bv, nil
	}}
}

func (p *parser) unary() (*node, error) {
	t := p.peek()
	if !p.accept("!") {
		return p.member()
	}

	n, err := p.unary()
	if err != nil {
		return nil, err
	}

	if n.typ != typBool {
		return nil, fmt.Errorf("at %d: ! negates a bool, not a %s", t.pos+1, n.typ)
	}

	return &node{typ: typBool, eval: func(env Env) (any, error) {
		v, err := n.eval(env)
		if err != nil {
			return nil, err
		}

		return !v.(bool), nil //nolint:forcetypeassert // typed
	}}, nil
}

// member reads a primary and what follows it: disk's fields, a string's
// methods.
func (p *parser) member() (*node, error) {
	n, err := p.primary()
	if err != nil {
		return nil, err
	}

	for {
		t := p.peek()
		if !p.accept(".") {
			if n.typ == typDisk {
				return nil, fmt.Errorf("at %d: disk is a message: select one of its fields (disk.size, disk.transport, ...)", t.pos+1)
			}

			return n, nil
		}

		name := p.next()
		if name.kind != tokIdent {
			return nil, fmt.Errorf("at %d: want a field or method name after ., got %s", name.pos+1, describe(name))
		}

		if n.typ == typDisk {
			f, ok := fields[name.text]
			if !ok {
				return nil, fmt.Errorf("at %d: disk has no field %q (it has %s)", name.pos+1, name.text, strings.Join(fieldNames(), ", "))
			}

			get := f.get
			n = &node{typ: f.typ, eval: func(env Env) (any, error) { return get(env.Disk), nil }}

			continue
		}

		if n, err = p.method(n, name); err != nil {
			return nil, err
		}
	}
}

func fieldNames() []string {
	out := make([]string, 0, len(fields))
	for k := range fields {
		out = append(out, k)
	}

	slices.Sort(out)

	return out
}

// method is a string's startsWith, endsWith, contains or matches.
func (p *parser) method(recv *node, name token) (*node, error) {
	args, err := p.args()
	if err != nil {
		return nil, err
	}

	fn := map[string]func(s, arg string) bool{
		"startsWith": strings.HasPrefix,
		"endsWith":   strings.HasSuffix,
		"contains":   strings.Contains,
	}[name.text]

	if fn == nil && name.text != "matches" {
		return nil, fmt.Errorf("at %d: %s() is not a method talosbox reads (startsWith, endsWith, contains, matches)", name.pos+1, name.text)
	}

	if recv.typ != typString || len(args) != 1 || args[0].typ != typString {
		return nil, fmt.Errorf("at %d: %s() is a string's method taking one string", name.pos+1, name.text)
	}

	arg := args[0]

	if name.text == "matches" {
		// The pattern is a constant in every selector worth writing;
		// compiled once, at parse time, it is checked there too.
		pat, err := arg.eval(Env{})
		if err != nil {
			return nil, err
		}

		re, err := regexp.Compile(pat.(string)) //nolint:forcetypeassert // typed
		if err != nil {
			return nil, fmt.Errorf("at %d: matches(): %w", name.pos+1, err)
		}

		fn = func(s, _ string) bool { return re.MatchString(s) }
	}

	return &node{typ: typBool, eval: func(env Env) (any, error) {
		s, a, err := both(env, recv, arg)
		if err != nil {
			return nil, err
		}

		return fn(s.(string), a.(string)), nil //nolint:forcetypeassert // typed
	}}, nil
}

func (p *parser) args() ([]*node, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}

	var out []*node

	if p.accept(")") {
		return out, nil
	}

	for {
		n, err := p.or()
		if err != nil {
			return nil, err
		}

		out = append(out, n)

		if p.accept(")") {
			return out, nil
		}

		if err := p.expect(","); err != nil {
			return nil, err
		}
	}
}

func (p *parser) primary() (*node, error) {
	t := p.next()

	switch t.kind {
	case tokString:
		return constant(typString, t.text), nil
	case tokInt:
		v, err := strconv.ParseInt(t.text, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("at %d: int %s out of range", t.pos+1, t.text)
		}

		return constant(typInt, v), nil
	case tokUint:
		v, _ := strconv.ParseUint(t.text, 0, 64) // lex checked it

		return constant(typUint, v), nil
	case tokOp:
		if t.text == "(" {
			n, err := p.or()
			if err != nil {
				return nil, err
			}

			return n, p.expect(")")
		}

		return nil, fmt.Errorf("at %d: unexpected %q", t.pos+1, t.text)
	case tokEOF:
		return nil, errors.New("the expression ends too early")
	}

	return p.ident(t)
}

func (p *parser) ident(t token) (*node, error) {
	switch t.text {
	case "true", "false":
		return constant(typBool, t.text == "true"), nil
	case "disk":
		return &node{typ: typDisk}, nil
	case "system_disk":
		return &node{typ: typBool, eval: func(env Env) (any, error) { return env.SystemDisk, nil }}, nil
	}

	if v, ok := units[t.text]; ok {
		return constant(typUint, v), nil
	}

	if pk := p.peek(); pk.kind == tokOp && pk.text == "(" {
		return p.call(t)
	}

	return nil, fmt.Errorf("at %d: undeclared reference to %q (an expression reads disk.<field>, system_disk and the size units KiB ... EiB, kB ... EB)", t.pos+1, t.text)
}

// call is glob(pattern, s), uint(x) or int(x).
func (p *parser) call(name token) (*node, error) {
	args, err := p.args()
	if err != nil {
		return nil, err
	}

	switch name.text {
	case "glob":
		if len(args) != 2 || args[0].typ != typString || args[1].typ != typString {
			return nil, fmt.Errorf("at %d: glob() takes a pattern and a string", name.pos+1)
		}

		pat, s := args[0], args[1]

		return &node{typ: typBool, eval: func(env Env) (any, error) {
			a, b, err := both(env, pat, s)
			if err != nil {
				return nil, err
			}

			return Glob(a.(string), b.(string)), nil //nolint:forcetypeassert // typed
		}}, nil
	case "uint", "int":
		if len(args) != 1 || (args[0].typ != typInt && args[0].typ != typUint) {
			return nil, fmt.Errorf("at %d: %s() converts one number", name.pos+1, name.text)
		}

		return convert(name.text, args[0]), nil
	}

	hint := ""
	if name.text == "u64" || name.text == "uint64" {
		hint = ": CEL converts with uint(...), or write a uint literal, 100u"
	}

	return nil, fmt.Errorf("at %d: %s() is not a function talosbox reads (glob, uint, int)%s", name.pos+1, name.text, hint)
}

func convert(to string, arg *node) *node {
	t := map[string]typ{"uint": typUint, "int": typInt}[to]

	return &node{typ: t, eval: func(env Env) (any, error) {
		v, err := arg.eval(env)
		if err != nil {
			return nil, err
		}

		switch x := v.(type) {
		case int64:
			if t == typInt {
				return x, nil
			}

			if x < 0 {
				return nil, errors.New("uint() of a negative number")
			}

			return uint64(x), nil
		case uint64:
			if t == typUint {
				return x, nil
			}

			if x > 1<<63-1 {
				return nil, errors.New("int() overflow")
			}

			return int64(x), nil
		}

		return nil, fmt.Errorf("%s() of a %T", to, v)
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
