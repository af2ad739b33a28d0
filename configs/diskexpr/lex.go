// Package diskexpr reads the disk selectors of Talos's typed documents: a
// CEL expression over one disk (`disk.transport == "nvme"`,
// `disk.size >= 100u * GiB && !system_disk`), as Talos evaluates it with
// its DiskLocator environment. It is a small CEL, typed as CEL is: the
// disk's fields, system_disk, the size units (KiB ... EiB, kB ... EB, all
// uint), literals, ! && || == != < <= > >= * in, parentheses, uint() and
// int(), glob(pattern, s) and the string methods startsWith, endsWith,
// contains and matches. What it does not read is refused by name.
package diskexpr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

type tokenKind int

const (
	tokIdent tokenKind = iota
	tokString
	tokInt
	tokUint
	tokOp
	tokEOF
)

type token struct {
	kind tokenKind
	text string // identifier, operator, or a literal's value
	pos  int    // byte offset, for messages
}

// ops are the operators, longest first.
var ops = []string{"&&", "||", "==", "!=", "<=", ">=", "<", ">", "!", "*", "(", ")", ",", ".", "+", "-", "/", "%", "?", ":", "[", "]", "{", "}"}

func lex(s string) ([]token, error) {
	var out []token

	for i := 0; i < len(s); {
		c := s[i]

		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			v, n, err := lexString(s[i:])
			if err != nil {
				return nil, fmt.Errorf("at %d: %w", i+1, err)
			}

			out = append(out, token{kind: tokString, text: v, pos: i})
			i += n
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (isIdentByte(s[j])) {
				j++
			}

			lit := s[i:j]
			kind := tokInt

			if strings.HasSuffix(lit, "u") || strings.HasSuffix(lit, "U") {
				kind, lit = tokUint, lit[:len(lit)-1]
			}

			if _, err := strconv.ParseUint(lit, 0, 64); err != nil {
				return nil, fmt.Errorf("at %d: invalid number %q", i+1, s[i:j])
			}

			out = append(out, token{kind: kind, text: lit, pos: i})
			i = j
		case isIdentByte(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}

			out = append(out, token{kind: tokIdent, text: s[i:j], pos: i})
			i = j
		default:
			found := false

			for _, op := range ops {
				if strings.HasPrefix(s[i:], op) {
					out = append(out, token{kind: tokOp, text: op, pos: i})
					i += len(op)
					found = true

					break
				}
			}

			if !found {
				return nil, fmt.Errorf("at %d: unexpected character %q", i+1, rune(c))
			}
		}
	}

	return append(out, token{kind: tokEOF, pos: len(s)}), nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c < 0x80 && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)))
}

// lexString reads a quoted literal at the start of s: its value and its
// length in s.
func lexString(s string) (string, int, error) {
	q := s[0]

	var sb strings.Builder

	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == q:
			return sb.String(), i + 1, nil
		case c == '\\' && i+1 < len(s):
			i++

			switch s[i] {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case '\\', '"', '\'':
				sb.WriteByte(s[i])
			default:
				return "", 0, fmt.Errorf("unsupported escape \\%c in a string", s[i])
			}
		case c == '\n':
			return "", 0, fmt.Errorf("a string is not closed")
		default:
			sb.WriteByte(c)
		}
	}

	return "", 0, fmt.Errorf("a string is not closed")
}
