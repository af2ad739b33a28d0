// Package configpatch applies machine config patches to YAML documents:
// RFC 6902 JSON patches and Talos-style strategic merge patches. It works on
// the YAML text alone, independent of the config Go types, so the same code
// serves `gen config --config-patch`, `machineconfig patch`, `patch mc` and
// `apply-config --config-patch`.
package configpatch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"gopkg.in/yaml.v3"
)

// Patch is one parsed patch: either a JSON patch or a strategic merge patch.
type Patch struct {
	source string // "@path" for a file, empty for inline text
	ops    jsonpatch.Patch
	merge  *yaml.Node // mapping node; nil for a JSON patch
}

// IsJSONPatch reports whether p is an RFC 6902 JSON patch.
func (p Patch) IsJSONPatch() bool { return p.merge == nil }

// String names the patch for messages: its kind and, for files, its source.
func (p Patch) String() string {
	kind := "strategic merge patch"
	if p.IsJSONPatch() {
		kind = "json patch"
	}

	if p.source == "" {
		return kind
	}

	return kind + " " + p.source
}

// Load parses one patch argument as given to --config-patch / --patch:
// "@path" reads the file, anything else is inline YAML or JSON.
func Load(arg string) ([]Patch, error) {
	if path, ok := strings.CutPrefix(arg, "@"); ok {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read patch: %w", err)
		}

		patches, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("patch %s: %w", arg, err)
		}

		for i := range patches {
			patches[i].source = arg
		}

		return patches, nil
	}

	patches, err := Parse([]byte(arg))
	if err != nil {
		return nil, fmt.Errorf("inline patch: %w", err)
	}

	return patches, nil
}

// LoadAll loads several patch arguments in order.
func LoadAll(args []string) ([]Patch, error) {
	var out []Patch

	for _, arg := range args {
		p, err := Load(arg)
		if err != nil {
			return nil, err
		}

		out = append(out, p...)
	}

	return out, nil
}

// Parse reads patch text. A list is an RFC 6902 JSON patch (in JSON or YAML
// syntax) and must be the only document; each mapping document is a
// strategic merge patch.
func Parse(data []byte) ([]Patch, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))

	var (
		patches []Patch
		hasJSON bool
	)

	for {
		var doc yaml.Node

		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return nil, fmt.Errorf("parse patch: %w", err)
		}

		if len(doc.Content) == 0 || isNull(doc.Content[0]) {
			continue // an empty document between separators
		}

		root := doc.Content[0]

		if err := checkSize(root); err != nil {
			return nil, fmt.Errorf("parse patch: %w", err)
		}

		switch root.Kind {
		case yaml.SequenceNode:
			ops, err := parseJSONPatch(root)
			if err != nil {
				return nil, err
			}

			hasJSON = true

			patches = append(patches, Patch{ops: ops})
		case yaml.MappingNode:
			if err := checkDirectives(root, nil, 0); err != nil {
				return nil, err
			}

			patches = append(patches, Patch{merge: root})
		default:
			return nil, fmt.Errorf("parse patch: line %d: want a mapping (strategic merge) or a list (JSON patch), got %s",
				root.Line, kindName(root))
		}
	}

	if len(patches) == 0 {
		return nil, errors.New("parse patch: patch is empty")
	}

	if hasJSON && len(patches) > 1 {
		return nil, errors.New("parse patch: a JSON patch must be the only document of a patch")
	}

	return patches, nil
}

var opFields = map[string][]string{
	"add":     {"path", "value"},
	"remove":  {"path"},
	"replace": {"path", "value"},
	"move":    {"from", "path"},
	"copy":    {"from", "path"},
	"test":    {"path", "value"},
}

// parseJSONPatch validates every operation up front (with its line), so a
// malformed patch is reported before anything is applied.
func parseJSONPatch(list *yaml.Node) (jsonpatch.Patch, error) {
	for i, item := range list.Content {
		if err := checkOp(item); err != nil {
			return nil, fmt.Errorf("json patch: op %d (line %d): %w", i+1, item.Line, err)
		}
	}

	raw, err := toJSON(list)
	if err != nil {
		return nil, fmt.Errorf("json patch: %w", err)
	}

	ops, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, fmt.Errorf("json patch: %w", err)
	}

	return ops, nil
}

func checkOp(item *yaml.Node) error {
	if item.Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping with \"op\" and \"path\", got %s", kindName(item))
	}

	field := func(name string) *yaml.Node {
		if j := findKey(item, name); j >= 0 {
			return item.Content[j+1]
		}

		return nil
	}

	op := field("op")
	if op == nil {
		return errors.New("missing \"op\"")
	}

	required, ok := opFields[op.Value]
	if !ok || op.Kind != yaml.ScalarNode {
		return fmt.Errorf("unknown op %q (want add, remove, replace, move, copy or test)", op.Value)
	}

	for _, name := range required {
		v := field(name)
		if v == nil {
			return fmt.Errorf("%s: missing %q", op.Value, name)
		}

		if name == "value" {
			continue
		}

		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
			return fmt.Errorf("%s: %q must be a string", op.Value, name)
		}

		if v.Value != "" && !strings.HasPrefix(v.Value, "/") {
			return fmt.Errorf("%s: %s %q must be empty or start with \"/\"", op.Value, name, v.Value)
		}
	}

	return nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	default:
		return "a document"
	}
}
