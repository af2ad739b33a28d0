package configs

import (
	"bytes"
	"fmt"
)

// foreignComment finds a comment of another language that made YAML fail
// to parse: // or /* */, as JSON-with-comments files (editors' settings,
// jsonc) and C-like languages write them. It returns the line (from 1) of
// the first one at or before the line YAML failed on and the message for
// it, or 0.
//
// In a file that starts like JSON ({ or [), any such comment up to the
// failing line is the likely cause. In YAML, where "//" is ordinary text
// in a block scalar, only a comment line on or just above the failing line
// is blamed.
func foreignComment(data []byte, failed int) (int, string) {
	lines := bytes.Split(data, []byte("\n"))
	if failed <= 0 || failed > len(lines) {
		failed = len(lines)
	}

	first := 1
	if trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\ufeff")), " \t\r\n"); len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		first = max(1, failed-1)
	}

	for n := first; n <= failed; n++ {
		if marker := commentMarker(lines[n-1]); marker != "" {
			return n, fmt.Sprintf("a %s comment is not YAML (nor JSON): write comments after a # (# ...), or remove them", marker)
		}
	}

	return 0, ""
}

// commentMarker is "//" or "/* */" when the line holds such a comment
// outside a quoted string: at its start, or after a space (a URL's "//"
// follows a colon).
func commentMarker(line []byte) string {
	var quote byte

	for i := 0; i+1 < len(line); i++ {
		c := line[i]

		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '/' && (line[i+1] == '/' || line[i+1] == '*') && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t' || line[i-1] == ','):
			if line[i+1] == '/' {
				return "//"
			}

			return "/* */"
		}
	}

	return ""
}
