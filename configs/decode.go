package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"sync"

	"gopkg.in/yaml.v3"
)

// Decode reads data as a machine config: the v1alpha1 document and the
// typed documents beside it, in any order (see Document). Decoding is
// strict: unknown fields and kinds, values of the wrong type, duplicate
// keys and duplicate documents are errors, each located by line and config
// path. When there is more than one problem the error is *Errors listing
// every *DecodeError.
func Decode(data []byte) (*Config, error) {
	cfg, _, err := decode(data, false)

	return cfg, err
}

// DecodeWithPositions is Decode that also says where each element of the
// config was written, so that validation can name the line of a problem
// (WithPositions).
func DecodeWithPositions(data []byte) (*Config, *Positions, error) {
	return decode(data, true)
}

func decode(data []byte, positions bool) (*Config, *Positions, error) {
	if len(data) > MaxSize {
		return nil, nil, &DecodeError{Msg: fmt.Sprintf(
			"config is %d bytes, larger than the %d bytes (16 MiB) the Talos API accepts in one ApplyConfiguration message",
			len(data), MaxSize)}
	}

	if err := checkText(data); err != nil {
		return nil, nil, err
	}

	roots, err := parseDocuments(data)
	if err != nil {
		return nil, nil, err
	}

	d := decoder{}
	if positions {
		d.lines = map[string]int{}
	}

	v1, docs := d.documents(roots)

	if err := d.result(); err != nil {
		return nil, nil, err
	}

	cfg := assemble(v1, docs)

	var pos *Positions
	if positions {
		pos = &Positions{lines: d.lines}
	}

	return cfg, pos, nil
}

// decodeV1Alpha1 decodes the v1alpha1 document.
func (d *decoder) decodeV1Alpha1(root *yaml.Node) *Config {
	var cfg Config

	d.value(root, reflect.ValueOf(&cfg).Elem())

	// As in Talos, a config that does not say persists: a node that kept
	// its config in memory would lose it at the next boot.
	if !hasKey(root, "persist") {
		cfg.Persist = true
	}

	return &cfg
}

// hasKey reports whether a mapping node has the key.
func hasKey(n *yaml.Node, key string) bool {
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}

	return false
}

// MaxSize is the largest config accepted, in bytes: the Talos API's limit on
// one ApplyConfiguration message (internal/apid.MaxApplyConfigSize), so a
// config that decodes here can also be applied. The request carries a few
// bytes besides the config; a config this close to the limit has bigger
// problems.
const MaxSize = 16 << 20

// yamlErrLine splits yaml.v3 syntax errors ("yaml: line 3: ...") so the line
// is reported the same way as every other decode error.
var yamlErrLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

func syntaxError(data []byte, err error) error {
	msg := err.Error()

	m := yamlErrLine().FindStringSubmatch(msg)
	if m == nil {
		// YAML's own message for a // comment says nothing of comments.
		if l, why := foreignComment(data, 0); l > 0 {
			return &DecodeError{Line: l, Msg: why}
		}

		return &DecodeError{Msg: "invalid YAML: " + trimYAMLPrefix(msg)}
	}

	line, _ := strconv.Atoi(m[1]) //nolint:errcheck // the pattern only matches digits
	line = problemLine(data, line, m[2])

	if l, why := foreignComment(data, line); l > 0 {
		return &DecodeError{Line: l, Msg: why}
	}

	return &DecodeError{Line: line, Msg: "invalid YAML: " + m[2]}
}

// maxLineSearchBytes bounds the work spent locating a syntax error: configs
// arrive over the network (even unauthenticated, in maintenance mode), and
// each step of the search parses a prefix of the input again.
const maxLineSearchBytes = 4 << 20

// problemLine finds the line of a syntax error. yaml.v3 reports the line
// where the enclosing block starts, which can be far above the mistake; the
// first prefix of the input that fails with the same message ends at the
// offending line.
func problemLine(data []byte, reported int, problem string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))

	end, budget := 0, maxLineSearchBytes
	for i, l := range lines {
		end += len(l)

		if i+1 < reported {
			continue
		}

		if budget -= end; budget < 0 {
			break
		}

		if err := parseAll(data[:end]); err != nil {
			if m := yamlErrLine().FindStringSubmatch(err.Error()); m != nil && m[2] == problem {
				return i + 1
			}
		}
	}

	return reported
}

// parseAll parses every document of data, for problemLine.
func parseAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))

	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}

			return err
		}
	}
}

func trimYAMLPrefix(s string) string {
	if len(s) > 6 && s[:6] == "yaml: " {
		return s[6:]
	}

	return s
}

// parseDocuments returns the content node of each document in data with
// content: empty documents (a leading "---", a document of comments only)
// are skipped, as Talos skips them.
func parseDocuments(data []byte) ([]*yaml.Node, error) {
	if !hasDocumentMarker(data) {
		// Without a "---" or "..." line there is at most one document, and
		// yaml.Unmarshal parses from memory faster than the streaming
		// decoder needed to look for more.
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, syntaxError(data, err)
		}

		root := documentContent(&doc)
		if root == nil {
			return nil, &DecodeError{Msg: "config is empty"}
		}

		return []*yaml.Node{root}, nil
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))

	var (
		roots   []*yaml.Node
		lastDoc int
	)

	for {
		var doc yaml.Node

		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return nil, syntaxError(data, err)
		}

		lastDoc = doc.Line

		if content := documentContent(&doc); content != nil {
			roots = append(roots, content)
		}
	}

	if len(roots) == 0 {
		return nil, &DecodeError{Line: lastDoc, Msg: "config is empty"}
	}

	return roots, nil
}

// hasDocumentMarker reports whether a line starts with "---" or "...",
// the only ways YAML starts another document.
func hasDocumentMarker(data []byte) bool {
	for _, marker := range []string{"---", "..."} {
		if bytes.HasPrefix(data, []byte(marker)) || bytes.Contains(data, []byte("\n"+marker)) {
			return true
		}
	}

	return false
}

// documentContent returns the document's top node, or nil when it holds
// nothing but an implicit null.
func documentContent(doc *yaml.Node) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}

	n := doc.Content[0]
	if n.Kind == yaml.ScalarNode && n.ShortTag() == nullTag && n.Value == "" {
		return nil
	}

	return n
}

func (d *decoder) result() error {
	switch len(d.errs) {
	case 0:
		return nil
	case 1:
		return d.errs[0]
	default:
		return &Errors{List: d.errs}
	}
}

// describe names a node's kind for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", truncate(n.Value, 40))
	default:
		return "an unexpected node"
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}

	return string(r[:n]) + "..."
}
