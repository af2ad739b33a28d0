package configs

import (
	"encoding/base64"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Base64 is binary data (PEM certificates and keys, mostly) written in YAML as
// one plain base64 string, the way Talos writes crt/key fields. A bare []byte
// would be emitted as a !!binary node, which Talos tools do not expect.
type Base64 []byte

// MarshalText implements encoding.TextMarshaler.
func (b Base64) MarshalText() ([]byte, error) {
	out := make([]byte, base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(out, b)

	return out, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *Base64) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*b = nil

		return nil
	}

	out := make([]byte, base64.StdEncoding.DecodedLen(len(text)))

	n, err := base64.StdEncoding.Decode(out, text)
	if err != nil {
		return fmt.Errorf("invalid base64: %w", err)
	}

	if n == 0 {
		out = nil
	}

	*b = out[:n:n]

	return nil
}

// FileMode is a file permission written as an octal number ("0o644").
// Decoding accepts any YAML integer, so "0644" (YAML 1.1 octal) works as the
// Talos guides write it.
type FileMode uint32

// MarshalYAML implements yaml.Marshaler.
func (m FileMode) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0o" + strconv.FormatUint(uint64(m), 8)}, nil
}

// PEMCertificateAndKey is a certificate with its private key, both PEM.
// The key is left out on nodes that must not hold it (workers).
type PEMCertificateAndKey struct {
	Crt Base64 `yaml:"crt,omitempty"`
	Key Base64 `yaml:"key,omitempty"`
}

// PEMCertificate is a PEM certificate alone, as in acceptedCAs.
type PEMCertificate struct {
	Crt Base64 `yaml:"crt,omitempty"`
}

// PEMKey is a PEM private key alone, as in the service account key.
type PEMKey struct {
	Key Base64 `yaml:"key,omitempty"`
}

// Unstructured is free-form YAML passed through to another program
// (kubelet configuration, audit policy, static pods). Values are what
// yaml.v3 decodes into interfaces: map[string]any, []any, string, int,
// float64, bool, time.Time and nil.
type Unstructured map[string]any

// MarshalYAML implements yaml.Marshaler. It builds the node tree itself so
// every scalar keeps its type: yaml.v3 would print float64(1000) as "1000",
// which reads back as an int and breaks Decode(Encode(c)) == c.
func (u Unstructured) MarshalYAML() (any, error) {
	return anyToNode(map[string]any(u)), nil
}

func anyToNode(v any) *yaml.Node {
	switch v := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case string:
		return stringNode(v)
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v, 10)}
	case uint64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(v, 10)}
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: formatFloat(v)}
	case time.Time:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: v.Format(time.RFC3339Nano)}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}

		sort.Strings(keys)

		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range keys {
			n.Content = append(n.Content, stringNode(k), anyToNode(v[k]))
		}

		return n
	case map[any]any:
		return anyMapNode(v)
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, item := range v {
			n.Content = append(n.Content, anyToNode(item))
		}

		return n
	default:
		// Values built in Go rather than decoded; yaml.v3 knows how to print
		// them and there is no decoded form to stay faithful to.
		n := &yaml.Node{}
		if err := n.Encode(v); err != nil {
			return stringNode(fmt.Sprint(v))
		}

		return n
	}
}

// anyMapNode prints a mapping with non-string keys (yaml.v3 decodes those
// into map[any]any) in a stable order.
func anyMapNode(m map[any]any) *yaml.Node {
	type entry struct {
		sortKey string
		k, v    any
	}

	entries := make([]entry, 0, len(m))
	for k, v := range m {
		entries = append(entries, entry{fmt.Sprintf("%T/%v", k, k), k, v})
	}

	sort.Slice(entries, func(i, j int) bool { return entries[i].sortKey < entries[j].sortKey })

	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, e := range entries {
		n.Content = append(n.Content, anyToNode(e.k), anyToNode(e.v))
	}

	return n
}

func stringNode(s string) *yaml.Node {
	if !utf8.ValidString(s) {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!binary", Value: base64.StdEncoding.EncodeToString([]byte(s))}
	}

	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}

	return n
}

func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	}

	return strconv.FormatFloat(f, 'g', -1, 64)
}
