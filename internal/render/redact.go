package render

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"io"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// minBareSecret is the shortest secret replaced wherever it appears; a
// shorter one (a weak registry password) is replaced only where it is a
// quoted string (YAML's and TOML's two quotes), so that one like "true"
// leaves the TOML's booleans be.
const minBareSecret = 8

// redact replaces the config's secrets in every artifact with
// configs.Redacted. What is secret is configs' list, the one EncodeRedacted
// applies for os:reader, so the two cannot disagree.
func redact(cfg *configs.Config, arts *Artifacts) {
	secrets := secretValues(cfg)
	if len(secrets) == 0 {
		return
	}

	for i := range arts.List {
		arts.List[i].Data = redactData(arts.List[i].Data, secrets)
	}
}

func redactData(data []byte, secrets []string) []byte {
	for _, s := range secrets {
		for _, q := range []string{`"`, `'`} {
			data = bytes.ReplaceAll(data, []byte(q+s+q), []byte(q+configs.Redacted+q))
		}

		if len(s) >= minBareSecret {
			data = replaceBare(data, s)
		}
	}

	return data
}

// replaceBare replaces s where it is not part of a longer word, so that a
// secret that is a suffix of a longer value leaves that value whole.
func replaceBare(data []byte, s string) []byte {
	var out []byte

	for {
		i := bytes.Index(data, []byte(s))
		if i < 0 {
			return append(out, data...)
		}

		end := i + len(s)
		if (i > 0 && isWord(data[i-1]) && isWord(s[0])) || (end < len(data) && isWord(data[end]) && isWord(s[len(s)-1])) {
			out = append(out, data[:end]...)
		} else {
			out = append(append(out, data[:i]...), configs.Redacted...)
		}

		data = data[end:]
	}
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Secrets are the values of cfg's secrets, as they appear in its YAML and
// decoded (a key's PEM, a bootstrap token's secret part), longest first:
// what must never reach a caller without os:admin.
func Secrets(cfg *configs.Config) []string { return secretValues(cfg) }

// secretValues are the config's secret values, longest first, with the
// forms renderers write them in: a bootstrap token's secret half (the
// token manifest has it alone) and a base64 value decoded (keys are
// written to files as PEM).
func secretValues(cfg *configs.Config) []string {
	plain, err := cfg.Encode()
	if err != nil {
		return nil
	}

	red, err := cfg.EncodeRedacted()
	if err != nil {
		return nil
	}

	// Every document: the typed ones hold secrets too (the Kubernetes
	// documents' CA and service account keys, encryption secrets).
	as, bs := yamlDocuments(plain), yamlDocuments(red)
	if as == nil || len(as) != len(bs) {
		return nil
	}

	set := map[string]bool{}

	var walk func(a, b *yaml.Node)

	walk = func(a, b *yaml.Node) {
		switch {
		case a.Kind == yaml.DocumentNode && b.Kind == yaml.DocumentNode, a.Kind == yaml.SequenceNode && b.Kind == yaml.SequenceNode:
			for i := range min(len(a.Content), len(b.Content)) {
				walk(a.Content[i], b.Content[i])
			}
		case a.Kind == yaml.MappingNode && b.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(a.Content); i += 2 {
				for j := 0; j+1 < len(b.Content); j += 2 {
					if a.Content[i].Value == b.Content[j].Value {
						walk(a.Content[i+1], b.Content[j+1])

						break
					}
				}
			}
		case a.Kind == yaml.ScalarNode && b.Kind == yaml.ScalarNode:
			if b.Value == configs.Redacted && a.Value != b.Value && a.Value != "" {
				addSecret(set, a.Value)
			}
		}
	}

	for i := range as {
		walk(as[i], bs[i])
	}

	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}

	slices.SortFunc(out, func(x, y string) int { return cmp.Or(len(y)-len(x), strings.Compare(x, y)) })

	return out
}

// yamlDocuments are the documents of a YAML stream, nil when it is not
// YAML.
func yamlDocuments(data []byte) []*yaml.Node {
	var out []*yaml.Node

	dec := yaml.NewDecoder(bytes.NewReader(data))

	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			return nil
		}

		out = append(out, &doc)
	}
}

func addSecret(set map[string]bool, v string) {
	set[v] = true

	// A document's PEM key, written without its trailing newline too.
	if t := strings.TrimSpace(v); t != v && t != "" {
		set[t] = true
	}

	if id, secret, ok := strings.Cut(v, "."); ok && len(id) == 6 && len(secret) == 16 {
		set[secret] = true
	}

	if dec, err := base64.StdEncoding.DecodeString(v); err == nil && len(dec) > 0 {
		set[string(dec)] = true

		// A PEM key is also written without its trailing newline.
		if t := strings.TrimSpace(string(dec)); t != "" {
			set[t] = true
		}
	}
}
