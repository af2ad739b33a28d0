package configpatch

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxNodes bounds a document or patch after alias expansion, so a small
// input cannot blow up into gigabytes while being merged or converted.
const maxNodes = 1 << 20

// Apply applies the patches in order to a YAML machine config (the
// v1alpha1 document and typed documents, see documents.go) and returns
// the patched YAML. Untouched parts keep their key order and comments; new
// keys are appended. The indentation of the input is kept when it can be
// detected.
func Apply(doc []byte, patches ...Patch) ([]byte, error) {
	docs, err := parseDocuments(doc)
	if err != nil {
		return nil, err
	}

	if len(patches) == 0 {
		return doc, nil
	}

	for i, p := range patches {
		if p.IsJSONPatch() {
			docs, err = applyJSONDocuments(docs, p.ops)
		} else {
			docs, err = mergeDocuments(docs, p.merge)
		}

		if err != nil {
			if len(patches) > 1 || p.source != "" {
				return nil, fmt.Errorf("patch %d (%s): %w", i+1, p, err)
			}

			return nil, err
		}
	}

	return encodeDocuments(docs, detectIndent(doc))
}

// spellOutNulls writes empty nulls inside flow collections as "null": the
// encoder would print them as an empty quoted string, which reads back as
// a string.
func spellOutNulls(n *yaml.Node, inFlow bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		if inFlow && n.Value == "" && n.ShortTag() == "!!null" {
			n.Value = "null"
		}
	case yaml.MappingNode, yaml.SequenceNode:
		flow := inFlow || n.Style&yaml.FlowStyle != 0
		for _, c := range n.Content {
			spellOutNulls(c, flow)
		}
	}
}

// fixAliases expands every alias whose anchor no longer precedes it in the
// output: a patch may have replaced or deleted the anchored value.
func fixAliases(n *yaml.Node, anchors map[string]*yaml.Node) {
	if n.Anchor != "" {
		anchors[n.Anchor] = n
	}

	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode && anchors[c.Value] != c.Alias {
			n.Content[i] = expandCopy(c.Alias)

			continue
		}

		fixAliases(c, anchors)
	}
}

// expandCopy deep-copies n with aliases expanded and anchors dropped.
func expandCopy(n *yaml.Node) *yaml.Node {
	n = deref(n)

	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))

	for i, child := range n.Content {
		c.Content[i] = expandCopy(child)
	}

	return &c
}

// checkSize counts nodes with aliases expanded and fails past maxNodes.
func checkSize(n *yaml.Node) error {
	budget := maxNodes

	var walk func(*yaml.Node, int) bool

	walk = func(n *yaml.Node, depth int) bool {
		budget--
		if budget < 0 || depth > maxDepth {
			return false
		}

		if n.Kind == yaml.AliasNode {
			return walk(n.Alias, depth+1)
		}

		for _, c := range n.Content {
			if !walk(c, depth+1) {
				return false
			}
		}

		return true
	}

	if !walk(n, 0) {
		return fmt.Errorf("document is too large or too deep once aliases are expanded (limit %d nodes, depth %d)", maxNodes, maxDepth)
	}

	return nil
}

// detectIndent finds the smallest indentation of a mapping entry in the
// input; 4 (the Talos default) when there is none.
func detectIndent(doc []byte) int {
	indent := 0

	for line := range strings.Lines(string(doc)) {
		trimmed := strings.TrimLeft(line, " ")
		n := len(line) - len(trimmed)

		if n == 0 || trimmed == "" || trimmed[0] == '#' || trimmed[0] == '-' || trimmed[0] == '\n' {
			continue
		}

		if indent == 0 || n < indent {
			indent = n
		}
	}

	if indent < 2 || indent > 9 {
		return 4
	}

	return indent
}
