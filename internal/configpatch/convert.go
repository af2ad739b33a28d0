package configpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits on YAML -> JSON conversion: aliases can expand exponentially
// ("billion laughs"), and patches come from users and remote nodes.
const (
	maxJSONSize = 64 << 20
	maxDepth    = 1000
)

var errTooLarge = errors.New("document expands beyond 64 MiB (alias expansion?)")

// toJSON renders a YAML node as JSON, keeping mapping key order so the JSON
// patch library (which preserves order) hands it back unchanged.
func toJSON(n *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, n, 0); err != nil {
		return nil, err
	}

	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return errors.New("document nests too deeply")
	}

	if buf.Len() > maxJSONSize {
		return errTooLarge
	}

	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")

			return nil
		}

		return writeJSON(buf, n.Content[0], depth+1)
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias, depth+1)
	case yaml.SequenceNode:
		buf.WriteByte('[')

		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}

			if err := writeJSON(buf, item, depth+1); err != nil {
				return err
			}
		}

		buf.WriteByte(']')

		return nil
	case yaml.MappingNode:
		return writeMappingJSON(buf, n, depth)
	case yaml.ScalarNode:
		s, err := scalarJSON(n)
		if err != nil {
			return err
		}

		buf.Write(s)

		return nil
	default:
		return fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
}

func writeMappingJSON(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	seen := make(map[string]bool, len(n.Content)/2)

	buf.WriteByte('{')

	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: mapping keys must be scalars to convert to JSON", k.Line)
		}

		if k.ShortTag() == "!!merge" {
			return fmt.Errorf("line %d: YAML merge keys (<<) are not supported", k.Line)
		}

		if seen[k.Value] {
			return fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
		}

		seen[k.Value] = true

		if i > 0 {
			buf.WriteByte(',')
		}

		key, _ := json.Marshal(k.Value) // marshalling a string cannot fail
		buf.Write(key)
		buf.WriteByte(':')

		if err := writeJSON(buf, n.Content[i+1], depth+1); err != nil {
			return err
		}
	}

	buf.WriteByte('}')

	return nil
}

// scalarJSON converts a scalar by its resolved YAML tag, so `0o644`, `0x10`
// and `1_000` become the numbers they denote.
func scalarJSON(n *yaml.Node) ([]byte, error) {
	switch n.ShortTag() {
	case "!!null":
		return []byte("null"), nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}

		return strconv.AppendBool(nil, b), nil
	case "!!int":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}

		return marshalNumber(n, v)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}

		return marshalNumber(n, f)
	default:
		// Strings, timestamps, binary and custom tags keep their text.
		return json.Marshal(n.Value)
	}
}

func marshalNumber(n *yaml.Node, v any) ([]byte, error) {
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return nil, fmt.Errorf("line %d: %q has no JSON representation", n.Line, n.Value)
	}

	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", n.Line, err)
	}

	return out, nil
}

// fromJSON parses JSON into YAML nodes, keeping object key order.
func fromJSON(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()

	n, err := readJSONValue(dec)
	if err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}

	return n, nil
}

func readJSONValue(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}

	switch v := tok.(type) {
	case json.Delim:
		kind, end := yaml.SequenceNode, json.Delim(']')
		if v == '{' {
			kind, end = yaml.MappingNode, json.Delim('}')
		}

		n := &yaml.Node{Kind: kind, Tag: map[yaml.Kind]string{yaml.SequenceNode: "!!seq", yaml.MappingNode: "!!map"}[kind]}

		for dec.More() {
			if kind == yaml.MappingNode {
				keyTok, err := dec.Token()
				if err != nil {
					return nil, err
				}

				key, _ := keyTok.(string) // object keys are always strings
				n.Content = append(n.Content, strScalar(key))
			}

			item, err := readJSONValue(dec)
			if err != nil {
				return nil, err
			}

			n.Content = append(n.Content, item)
		}

		if tok, err := dec.Token(); err != nil || tok != end {
			return nil, fmt.Errorf("unterminated %c", v)
		}

		return n, nil
	case string:
		return strScalar(v), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(v.String(), ".eE") {
			tag = "!!float"
		}

		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}, nil
	default: // nil
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
}

func strScalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}
