package configs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The subset of CEL read here: identifiers and member selections
// (disk.size), string and integer literals, !, &&, ||, comparisons, *,
// parentheses, and calls (glob(a, b), disk.model.startsWith("x")).

type celKind int

const (
	celIdent celKind = iota
	celString
	celNumber
	celNot
	celBinary
	celCall
)

type celNode struct {
	kind celKind
	// name is an identifier (dotted), a string's value, a number's
	// digits, or a call's function name.
	name string
	op   string
	args []celNode
}

// String writes the node back as CEL, for messages.
func (n celNode) String() string {
	switch n.kind {
	case celString:
		return strconv.Quote(n.name)
	case celNot:
		return "!" + n.args[0].String()
	case celBinary:
		return n.args[0].String() + " " + n.op + " " + n.args[1].String()
	case celCall:
		if n.name == "glob" {
			return "glob(" + n.args[0].String() + ", " + n.args[1].String() + ")"
		}

		return n.args[0].String() + "." + n.name + "(" + n.args[1].String() + ")"
	}

	return n.name
}

func parseCEL(s string) (celNode, error) {
	toks, err := lexCEL(s)
	if err != nil {
		return celNode{}, err
	}

	p := &celParser{toks: toks}

	n, err := p.or()
	if err != nil {
		return celNode{}, err
	}

	if p.pos < len(p.toks) {
		return celNode{}, fmt.Errorf("unexpected %q", p.toks[p.pos].text)
	}

	return n, nil
}

type celToken struct {
	kind celKind // celIdent, celString, celNumber; punctuation is celBinary
	text string
}

func lexCEL(s string) ([]celToken, error) {
	var out []celToken

	for i := 0; i < len(s); {
		c := s[i]

		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			end := i + 1
			for end < len(s) && s[end] != c {
				if s[end] == '\\' {
					end++
				}

				end++
			}

			if end >= len(s) {
				return nil, errors.New("a string is not closed")
			}

			v, err := strconv.Unquote(`"` + strings.ReplaceAll(s[i+1:end], `"`, `\"`) + `"`)
			if c == '"' {
				v, err = strconv.Unquote(s[i : end+1])
			}

			if err != nil {
				return nil, fmt.Errorf("string %s: %w", s[i:end+1], err)
			}

			out = append(out, celToken{kind: celString, text: v})
			i = end + 1
		case c >= '0' && c <= '9':
			end := i
			for end < len(s) && s[end] >= '0' && s[end] <= '9' {
				end++
			}

			out = append(out, celToken{kind: celNumber, text: s[i:end]})

			// 120u is an unsigned literal.
			if end < len(s) && (s[end] == 'u' || s[end] == 'U') {
				end++
			}

			i = end
		case c == '_' || unicode.IsLetter(rune(c)):
			end := i
			for end < len(s) && (s[end] == '_' || s[end] == '.' || unicode.IsLetter(rune(s[end])) || unicode.IsDigit(rune(s[end]))) {
				end++
			}

			out = append(out, celToken{kind: celIdent, text: s[i:end]})
			i = end
		default:
			op := ""

			for _, o := range []string{"&&", "||", "==", "!=", "<=", ">=", "<", ">", "!", "(", ")", ",", "*"} {
				if strings.HasPrefix(s[i:], o) {
					op = o

					break
				}
			}

			if op == "" {
				return nil, fmt.Errorf("unexpected %q", string(c))
			}

			out = append(out, celToken{kind: celBinary, text: op})
			i += len(op)
		}
	}

	return out, nil
}

type celParser struct {
	toks []celToken
	pos  int
}

func (p *celParser) peek(op string) bool {
	return p.pos < len(p.toks) && p.toks[p.pos].kind == celBinary && p.toks[p.pos].text == op
}

func (p *celParser) binary(next func() (celNode, error), ops ...string) (celNode, error) {
	l, err := next()
	if err != nil {
		return celNode{}, err
	}

	for {
		op := ""

		for _, o := range ops {
			if p.peek(o) {
				op = o
			}
		}

		if op == "" {
			return l, nil
		}

		p.pos++

		r, err := next()
		if err != nil {
			return celNode{}, err
		}

		l = celNode{kind: celBinary, op: op, args: []celNode{l, r}}
	}
}

func (p *celParser) or() (celNode, error) {
	n, err := p.binary(p.and, "||")
	if err == nil && n.kind == celBinary && n.op == "||" {
		return celNode{}, errors.New("|| (either of two conditions) is not something talosbox's disk selector can say: it matches when every condition holds")
	}

	return n, err
}

func (p *celParser) and() (celNode, error) { return p.binary(p.comparison, "&&") }

func (p *celParser) comparison() (celNode, error) {
	n, err := p.binary(p.product, "==", "!=", "<=", ">=", "<", ">")
	if err == nil && n.kind == celBinary && n.op == "!=" {
		return celNode{}, fmt.Errorf("%s: != (a property differing from a value) is not something talosbox's disk selector can say", n)
	}

	return n, err
}

func (p *celParser) product() (celNode, error) { return p.binary(p.unary, "*") }

func (p *celParser) unary() (celNode, error) {
	if p.peek("!") {
		p.pos++

		n, err := p.unary()
		if err != nil {
			return celNode{}, err
		}

		return celNode{kind: celNot, args: []celNode{n}}, nil
	}

	return p.primary()
}

func (p *celParser) primary() (celNode, error) {
	if p.pos >= len(p.toks) {
		return celNode{}, errors.New("the expression ends early")
	}

	t := p.toks[p.pos]
	p.pos++

	switch t.kind {
	case celString, celNumber:
		return celNode{kind: t.kind, name: t.text}, nil
	case celIdent:
		if !p.peek("(") {
			return celNode{kind: celIdent, name: t.text}, nil
		}

		return p.call(t.text)
	}

	if t.text != "(" {
		return celNode{}, fmt.Errorf("unexpected %q", t.text)
	}

	n, err := p.or()
	if err != nil {
		return celNode{}, err
	}

	if !p.peek(")") {
		return celNode{}, errors.New("a parenthesis is not closed")
	}

	p.pos++

	return n, nil
}

// call reads the arguments of name(...): a function (glob) or a method
// on a member (disk.model.startsWith), whose receiver is the first
// argument.
func (p *celParser) call(name string) (celNode, error) {
	p.pos++ // (

	n := celNode{kind: celCall, name: name}

	if recv, method, ok := celCutLast(name, "."); ok {
		n.name = method
		n.args = append(n.args, celNode{kind: celIdent, name: recv})
	}

	for explicit := 0; !p.peek(")"); explicit++ {
		if explicit > 0 {
			if !p.peek(",") {
				return celNode{}, fmt.Errorf("the arguments of %s() are not separated by commas", n.name)
			}

			p.pos++
		}

		arg, err := p.or()
		if err != nil {
			return celNode{}, err
		}

		n.args = append(n.args, arg)

		if p.pos >= len(p.toks) {
			return celNode{}, fmt.Errorf("the arguments of %s() are not closed", n.name)
		}
	}

	p.pos++ // )

	return n, nil
}

func celCutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}

	return s[:i], s[i+len(sep):], true
}
