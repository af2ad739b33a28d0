package configs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Positions says on which line of its source each element of a config was
// written, by config path ("machine.files[0].path"). Validation works on
// decoded values, which no longer carry lines; with WithPositions it names
// the line of each problem as decoding does.
type Positions struct {
	lines map[string]int
}

// Line is the line where path was written, or that of the closest element
// above it that was (a default that was never written has no line; a
// problem with it is located at its section). 0 when nothing is known.
func (p *Positions) Line(path string) int {
	if p == nil {
		return 0
	}

	for path != "" {
		if l, ok := p.lines[path]; ok {
			return l
		}

		path = parentPath(path)
	}

	return 0
}

// parentPath drops the last element of a config path: a field (".name"),
// an index ("[3]") or a key (`["k.v"]`, whose quotes may hold dots and
// brackets).
func parentPath(path string) string {
	if strings.HasSuffix(path, `"]`) {
		// Find the opening `["` of the last key: the quoted key is
		// Go-quoted, so an unescaped `["` before it starts it.
		for i := len(path) - 2; i > 0; i-- {
			if path[i] == '"' && path[i-1] == '[' {
				if _, err := strconv.Unquote(path[i : len(path)-1]); err == nil {
					return path[:i-1]
				}
			}
		}
	}

	cut := strings.LastIndexAny(path, ".[")
	if cut < 0 {
		return ""
	}

	return path[:cut]
}

// record notes where the element at the decoder's current path was written.
func (d *decoder) record(n *yaml.Node) {
	if d.lines == nil {
		return
	}

	p := d.pathString()
	if _, ok := d.lines[p]; !ok {
		d.lines[p] = n.Line
	}
}

// recordFreeForm notes the lines inside a free-form section (extraConfig,
// auditPolicy, a static pod), whose keys the typed decoder does not walk:
// its rules (protected kubelet fields, audit levels) name paths in it.
func (d *decoder) recordFreeForm(n *yaml.Node, path string, depth int) {
	if d.lines == nil || depth > 32 {
		return
	}

	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}

	if _, ok := d.lines[path]; !ok {
		d.lines[path] = n.Line
	}

	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := path + "." + n.Content[i].Value
			if _, ok := d.lines[key]; !ok {
				d.lines[key] = n.Content[i].Line
			}

			d.recordFreeForm(n.Content[i+1], key, depth+1)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			d.recordFreeForm(item, path+"["+strconv.Itoa(i)+"]", depth+1)
		}
	}
}

// WithPositions locates each problem found by Validate on its source line,
// from DecodeWithPositions.
func WithPositions(p *Positions) ValidateOption {
	return func(o *validateOptions) { o.positions = p }
}

// Locate sets the line of every *ValidationError in err that has none,
// for problems found after Validate (renderers) at config paths.
func (p *Positions) Locate(err error) {
	if p == nil || err == nil {
		return
	}

	var list *Errors
	if errors.As(err, &list) {
		for _, e := range list.List {
			p.Locate(e)
		}

		return
	}

	var ve *ValidationError
	if errors.As(err, &ve) && ve.Line == 0 {
		ve.Line = p.Line(ve.Path)
	}
}

// checkText refuses bytes YAML cannot carry, naming their line: yaml.v3
// reports a NUL or invalid UTF-8 without saying where, which in a config
// pasted from a terminal or a binary-safe editor is hard to find.
func checkText(data []byte) error {
	// Editors on Windows save UTF-16 with a byte order mark; without the
	// check below it would be reported as "a NUL byte". (A UTF-8 byte
	// order mark is fine: YAML skips it.)
	for _, bom := range []struct {
		mark []byte
		name string
	}{{[]byte{0xff, 0xfe}, "FF FE, little-endian"}, {[]byte{0xfe, 0xff}, "FE FF, big-endian"}} {
		if bytes.HasPrefix(data, bom.mark) {
			return &DecodeError{Line: 1, Msg: fmt.Sprintf("the config is UTF-16 text (byte order mark %s): save it as UTF-8", bom.name)}
		}
	}

	if looksUTF16(data) {
		return &DecodeError{Line: 1, Msg: "the config looks like UTF-16 text without a byte order mark (every other byte is NUL): save it as UTF-8"}
	}

	if i := bytes.IndexByte(data, 0); i >= 0 {
		return &DecodeError{Line: lineOf(data, i), Msg: "the config contains a NUL byte (\\x00): a config is UTF-8 text"}
	}

	if utf8.Valid(data) {
		return nil
	}

	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return &DecodeError{Line: lineOf(data, i), Msg: fmt.Sprintf("invalid UTF-8 (byte 0x%02x): a config is UTF-8 text; binary values go in base64", data[i])}
		}

		i += size
	}

	return nil
}

func lineOf(data []byte, offset int) int {
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// looksUTF16 reports ASCII text in UTF-16: a NUL in every other byte of
// its start, all at odd offsets (little-endian) or all at even ones.
func looksUTF16(data []byte) bool {
	n := min(len(data), 64) &^ 1
	if n < 4 {
		return false
	}

	var even, odd int

	for i := range n {
		if data[i] == 0 {
			if i%2 == 0 {
				even++
			} else {
				odd++
			}
		}
	}

	return (odd == n/2 && even == 0) || (even == n/2 && odd == 0)
}
