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

// Decode reads data as one v1alpha1 config document. Decoding is strict:
// unknown fields, values of the wrong type, duplicate keys and extra
// documents are errors, each located by line and config path. When there is
// more than one problem the error is *Errors listing every *DecodeError.
func Decode(data []byte) (*Config, error) {
	if len(data) > MaxSize {
		return nil, &DecodeError{Msg: fmt.Sprintf(
			"config is %d bytes, larger than the %d bytes (16 MiB) the Talos API accepts in one ApplyConfiguration message",
			len(data), MaxSize)}
	}

	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}

	var cfg Config

	d := decoder{}
	d.value(root, reflect.ValueOf(&cfg).Elem())

	if err := d.result(); err != nil {
		return nil, err
	}

	return &cfg, nil
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
		return &DecodeError{Msg: "invalid YAML: " + trimYAMLPrefix(msg)}
	}

	line, _ := strconv.Atoi(m[1]) //nolint:errcheck // the pattern only matches digits

	return &DecodeError{Line: problemLine(data, line, m[2]), Msg: "invalid YAML: " + m[2]}
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

// parseDocument returns the content node of the single document in data.
func parseDocument(data []byte) (*yaml.Node, error) {
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

		return root, nil
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))

	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &DecodeError{Msg: "config is empty"}
		}

		return nil, syntaxError(data, err)
	}

	for {
		var next yaml.Node

		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return nil, syntaxError(data, err)
		}

		// A trailing "---" or a document of comments only is harmless;
		// anything else would be silently ignored by a single-document
		// reader, so refuse it.
		if content := documentContent(&next); content != nil {
			return nil, &DecodeError{
				Line: content.Line,
				Msg:  "unexpected second YAML document: a v1alpha1 machine config is a single document",
			}
		}
	}

	root := documentContent(&doc)
	if root == nil {
		return nil, &DecodeError{Line: doc.Line, Msg: "config is empty"}
	}

	return root, nil
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
