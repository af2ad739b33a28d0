package configpatch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// A machine config is a stream of documents: the v1alpha1 one and typed
// ones (configs.Document). Patches address them as Talos does:
//   - a strategic merge patch document merges into the config document of
//     the same identity (the v1alpha1 one, or the same kind and name); a
//     typed patch document with no counterpart is added, and one that is
//     only `$patch: delete` (with its apiVersion, kind and name) removes
//     its counterpart;
//   - a JSON patch addresses the v1alpha1 document (/machine/...), and,
//     beyond Talos (which refuses JSON patches on multi-document configs),
//     a typed document by its kind, then its name for named kinds:
//     /HostnameConfig/hostname, /RegistryMirrorConfig/ghcr.io/endpoints/0.
//     Adding or removing /Kind (or /Kind/name) adds or removes a document.
//     v1alpha1 keys start with a lower-case letter and kinds with an
//     upper-case one, so the two never collide.

// document is one YAML document of a config.
type document struct {
	root *yaml.Node // the content mapping; nil for the empty v1alpha1 document
	head *yaml.Node // the document node, with the document's comments
}

// kind is the document's kind, "" for the v1alpha1 document.
func (d *document) kind() string {
	if d.root == nil {
		return ""
	}

	if j := findKey(d.root, "kind"); j >= 0 {
		return d.root.Content[j+1].Value
	}

	return ""
}

// name is a named document's name.
func (d *document) name() string {
	if d.root == nil {
		return ""
	}

	if j := findKey(d.root, "name"); j >= 0 {
		return d.root.Content[j+1].Value
	}

	return ""
}

// id identifies the document for merging: "" for v1alpha1, the kind, or
// the kind and name.
func (d *document) id() string {
	k := d.kind()
	if k == "" || !isNamed(k, d) {
		return k
	}

	return k + "/" + d.name()
}

// isNamed reports whether documents of kind are told apart by name: as
// configs says for the kinds it implements, and by the presence of a name
// for others.
func isNamed(kind string, d *document) bool {
	if named, known := configs.KindNamed(kind); known {
		return named
	}

	return d != nil && findKey(d.root, "name") >= 0
}

// parseDocuments splits a config into its documents. An empty input is
// one empty v1alpha1 document, which a patch may fill.
func parseDocuments(data []byte) ([]*document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))

	var docs []*document

	for {
		var n yaml.Node

		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return nil, fmt.Errorf("parse config: %w", err)
		}

		if len(n.Content) == 0 || isNull(n.Content[0]) {
			if len(docs) == 0 && (n.HeadComment != "" || n.FootComment != "") {
				docs = append(docs, &document{head: &n})
			}

			continue
		}

		root := n.Content[0]
		if root.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("parse config: line %d: a machine config document must be a mapping, got %s", root.Line, kindName(root))
		}

		if err := checkSize(root); err != nil {
			return nil, fmt.Errorf("parse config: %w", err)
		}

		d := &document{root: root, head: &n}
		if d.kind() == "" && slices.ContainsFunc(docs, func(o *document) bool { return o.root != nil && o.kind() == "" }) {
			return nil, fmt.Errorf("parse config: line %d: a second v1alpha1 document (one without a kind): every document but one names its apiVersion and kind", root.Line)
		}

		docs = append(docs, d)
	}

	return docs, nil
}

// v1alpha1 returns the v1alpha1 document, made (empty, first) when the
// config has none.
func v1alpha1(docs []*document) ([]*document, *document) {
	for _, d := range docs {
		if d.kind() == "" {
			return docs, d
		}
	}

	d := &document{}

	return append([]*document{d}, docs...), d
}

// mergeDocuments merges one strategic merge patch document into the
// config's documents.
func mergeDocuments(docs []*document, patch *yaml.Node) ([]*document, error) {
	p := &document{root: patch}
	id := p.id()

	if id == "" {
		docs, v1 := v1alpha1(docs)

		root, err := applyMerge(v1.root, patch)
		if err != nil {
			return nil, err
		}

		v1.root = root

		return docs, nil
	}

	for i, d := range docs {
		if d.id() != id {
			continue
		}

		if isDelete(patch) {
			return append(docs[:i:i], docs[i+1:]...), nil
		}

		if err := mergeMapping(d.root, patch, []string{p.kind()}); err != nil {
			return nil, err
		}

		return docs, nil
	}

	if isDelete(patch) {
		// Deleting a document that is not there is a no-op, as in Talos.
		return docs, nil
	}

	return append(docs, &document{root: cleanCopy(patch, false)}), nil
}

// addressesDocument reports whether a JSON pointer starts with a document
// kind (an upper-case first letter).
func addressesDocument(pointer string) bool {
	rest, ok := strings.CutPrefix(pointer, "/")

	return ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z'
}

// encodeDocuments writes the documents back, separated by "---".
func encodeDocuments(docs []*document, indent int) ([]byte, error) {
	var buf bytes.Buffer

	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}

		out := &yaml.Node{Kind: yaml.DocumentNode}
		if d.head != nil {
			out.HeadComment, out.LineComment, out.FootComment = d.head.HeadComment, d.head.LineComment, d.head.FootComment
		}

		root := d.root
		if root == nil {
			root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}

		spellOutNulls(root, false)
		fixAliases(root, map[string]*yaml.Node{})
		out.Content = []*yaml.Node{root}

		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(indent)

		if err := enc.Encode(out); err != nil {
			return nil, fmt.Errorf("encode patched config: %w", err)
		}

		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("encode patched config: %w", err)
		}
	}

	return buf.Bytes(), nil
}
