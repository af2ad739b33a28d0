package diskexpr

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

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

// unexpectedOps are CEL's operators a selector may not use, named.
var unexpectedOps = map[string]string{
	"?": "the conditional ? :", ":": "the conditional ? :", "+": "+ (addition)", "-": "- (subtraction, negation)",
	"/": "/ (division)", "%": "% (remainder)", "{": "maps", "}": "maps", "]": "indexing",
}

// unexpected refuses t where the grammar has no place for it, saying
// what an expression is built of when t is CEL that talosbox does not
// evaluate.
func unexpected(t token) error {
	if what, ok := unexpectedOps[t.text]; ok && t.kind == tokOp {
		return fmt.Errorf("at %d: talosbox does not evaluate %s in a disk selector; it reads %s", t.pos+1, what, Supported)
	}

	if t.kind == tokEOF {
		return errors.New("the expression ends too early")
	}

	return fmt.Errorf("at %d: unexpected %s", t.pos+1, describe(t))
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

// logicalNode is && or ||. An operand whose value is unknown (a partial
// evaluation) leaves the result unknown unless the other operand decides
// it, as in CEL's commutative logic.
func logicalNode(op string, l, r *node) *node {
	decisive := op == "||" // the operand value that decides the result

	return &node{typ: typBool, eval: func(env Env) (any, error) {
		a, errA := l.eval(env)

		switch {
		case errA == nil && a.(bool) == decisive: //nolint:forcetypeassert // typed
			return a, nil
		case errA != nil && !errors.Is(errA, errUnknown):
			return nil, errA
		}

		b, errB := r.eval(env)

		switch {
		case errB != nil:
			return nil, errB
		case errA != nil && b.(bool) != decisive: //nolint:forcetypeassert // typed
			return nil, errA
		}

		return b, nil
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

	n := &node{typ: typBool, eval: func(env Env) (any, error) {
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
	}}

	if op == "==" && l.typ == typString {
		if l.konst {
			l, r = r, l
		}

		if l.field != "" && r.konst {
			v, _ := r.eval(Env{})                                          //nolint:errcheck // a literal
			n.equality = &fieldEquality{field: l.field, value: v.(string)} //nolint:forcetypeassert // typed
		}
	}

	return n, nil
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

	for p.accept(".") {
		name := p.next()

		switch _, isField := fields[name.text]; {
		case name.kind != tokIdent:
			return nil, fmt.Errorf("at %d: want a field or method name after ., got %s", name.pos+1, describe(name))
		case n.typ == typDisk && !isField:
			return nil, fmt.Errorf("at %d: disk has no field %q (it has %s)", name.pos+1, name.text, strings.Join(fieldNames(), ", "))
		case n.typ == typDisk:
			n = fieldNode(name.text)
		default:
			if n, err = p.method(n, name); err != nil {
				return nil, err
			}
		}
	}

	switch t := p.peek(); {
	case t.kind == tokOp && t.text == "[":
		return nil, fmt.Errorf("at %d: talosbox does not evaluate CEL's indexing in a disk selector (test a list with in: \"x\" in disk.symlinks)", t.pos+1)
	case n.typ == typDisk:
		return nil, fmt.Errorf("at %d: disk is a message: select one of its fields (disk.size, disk.transport, ...)", t.pos+1)
	}

	return n, nil
}

func fieldNames() []string { return slices.Sorted(maps.Keys(fields)) }

// args reads a comma-separated list up to the closing token: a call's
// arguments (after its "("), a list's elements (after its "[").
func (p *parser) args(closing string) ([]*node, error) {
	if closing == ")" {
		if err := p.expect("("); err != nil {
			return nil, err
		}
	}

	var out []*node

	if p.accept(closing) {
		return out, nil
	}

	for {
		n, err := p.or()
		if err != nil {
			return nil, err
		}

		out = append(out, n)

		if p.accept(closing) {
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
		v, err := parseNumber(t.text)
		if err != nil || v > 1<<63-1 {
			return nil, fmt.Errorf("at %d: int %s out of range", t.pos+1, t.text)
		}

		return constant(typInt, int64(v)), nil
	case tokUint:
		v, _ := parseNumber(t.text) //nolint:errcheck // lex checked it

		return constant(typUint, v), nil
	case tokOp:
		switch t.text {
		case "(":
			n, err := p.or()
			if err != nil {
				return nil, err
			}

			return n, p.expect(")")
		case "[":
			return p.list(t)
		}

		return nil, unexpected(t)
	case tokEOF:
		return nil, unexpected(t)
	}

	return p.ident(t)
}

// list is a list literal of strings: disk.transport in ["nvme", "sata"].
func (p *parser) list(open token) (*node, error) {
	elems, err := p.args("]")
	if err != nil {
		return nil, err
	}

	for _, e := range elems {
		if e.typ != typString {
			return nil, fmt.Errorf("at %d: a list here holds strings, not %ss", open.pos+1, e.typ)
		}
	}

	return &node{typ: typList, eval: func(env Env) (any, error) {
		out := make([]string, len(elems))

		for i, e := range elems {
			v, err := e.eval(env)
			if err != nil {
				return nil, err
			}

			out[i] = v.(string) //nolint:forcetypeassert // typed
		}

		return out, nil
	}}, nil
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
