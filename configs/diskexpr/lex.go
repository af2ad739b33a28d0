// Package diskexpr reads the disk selectors of Talos's typed documents
// (UnattendedInstallConfig, VolumeConfig, UserVolumeConfig): a CEL
// expression over one disk (`disk.transport == "nvme"`,
// `disk.size >= 100u * GiB && !system_disk`), as Talos evaluates it with
// its DiskLocator environment. It is a small CEL, typed as CEL is: the
// disk's fields, system_disk, the size units (KiB ... EiB, kB ... EB, all
// uint), literals (strings with CEL's escapes and raw strings, decimal
// and hex numbers, lists of strings), ! && || == != < <= > >= * in,
// parentheses, uint() and int(), glob(pattern, s) and the string methods
// startsWith, endsWith, contains and matches. What it does not read is
// refused by name, with what it reads (Supported).
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
		case c == '"' || c == '\'' || isRawPrefix(s[i:]):
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

			if _, err := parseNumber(lit); err != nil {
				return nil, fmt.Errorf("at %d: invalid number %q (CEL's numbers here are decimal or hex, 0x1F, with u for a uint)", i+1, s[i:j])
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

// parseNumber reads a CEL integer literal without its sign and u:
// decimal, or hex after 0x (017 is seventeen, as in CEL, not octal).
func parseNumber(lit string) (uint64, error) {
	if hex, ok := strings.CutPrefix(lit, "0x"); ok {
		return strconv.ParseUint(hex, 16, 64)
	}

	return strconv.ParseUint(lit, 10, 64)
}

// isRawPrefix says whether s starts a raw string, r"..." or R'...'.
func isRawPrefix(s string) bool {
	return len(s) > 1 && (s[0] == 'r' || s[0] == 'R') && (s[1] == '"' || s[1] == '\'')
}

// lexString reads a quoted literal at the start of s (CEL's: '...' or
// "...", with its escapes; r"..." raw; triple quotes are not read): its
// value and its length in s.
func lexString(s string) (string, int, error) {
	raw := isRawPrefix(s)
	start := 1

	if raw {
		start = 2
	}

	q := s[start-1]

	var sb strings.Builder

	for i := start; i < len(s); i++ {
		switch c := s[i]; {
		case c == q:
			return sb.String(), i + 1, nil
		case c == '\\' && !raw && i+1 < len(s):
			n, err := unescape(&sb, s[i+1:])
			if err != nil {
				return "", 0, err
			}

			i += n
		case c == '\n':
			return "", 0, fmt.Errorf("a string is not closed")
		default:
			sb.WriteByte(c)
		}
	}

	return "", 0, fmt.Errorf("a string is not closed")
}

// simpleEscapes are CEL's one-character escapes.
var simpleEscapes = map[byte]byte{
	'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
	'\\': '\\', '\'': '\'', '"': '"', '`': '`', '?': '?',
}

// unescape writes the escape whose text (after the backslash) starts s,
// and says how many bytes of s it took.
func unescape(sb *strings.Builder, s string) (int, error) {
	if c, ok := simpleEscapes[s[0]]; ok {
		sb.WriteByte(c)

		return 1, nil
	}

	digits, base := 0, 16

	switch s[0] {
	case 'x', 'X':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	case '0', '1', '2', '3':
		digits, base = 3, 8
	default:
		return 0, fmt.Errorf("unsupported escape \\%c in a string", s[0])
	}

	text := s
	if base == 16 {
		text = s[1:]
	}

	used := len(s) - len(text) + digits
	if len(text) < digits {
		return 0, fmt.Errorf("escape \\%s is cut short", s)
	}

	// \x and octal escapes are code points up to U+00FF (\xe9 is é), as
	// in CEL's string literals; \u and \U any code point.
	v, err := strconv.ParseUint(text[:digits], base, 32)
	if err != nil || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) {
		return 0, fmt.Errorf("invalid escape \\%s in a string", s[:used])
	}

	sb.WriteRune(rune(v))

	return used, nil
}
