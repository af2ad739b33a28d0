package configpatch

import (
	"fmt"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// applyJSONDocuments applies a JSON patch to a config's documents. A
// patch that names no document kind, on a config of one document, is
// applied to the v1alpha1 document as it always was; otherwise to a view
// of the whole config as one mapping: the v1alpha1 document's keys, and
// each typed document under its kind (named kinds: under kind, then
// name), which is split back into documents afterwards.
func applyJSONDocuments(docs []*document, ops jsonpatch.Patch) ([]*document, error) {
	if !needsView(docs, ops) {
		docs, v1 := v1alpha1(docs)
		if v1.root == nil {
			v1.root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}

		root, err := applyJSONPatch(v1.root, ops)
		if err != nil {
			return nil, err
		}

		v1.root = root

		return docs, nil
	}

	view, err := documentView(docs)
	if err != nil {
		return nil, err
	}

	patched, err := applyJSONPatch(view, ops)
	if err != nil {
		return nil, err
	}

	return splitView(docs, patched)
}

func needsView(docs []*document, ops jsonpatch.Patch) bool {
	for _, d := range docs {
		if d.kind() != "" {
			return true
		}
	}

	for _, op := range ops {
		path, _ := op.Path()
		from, _ := op.From()

		if addressesDocument(path) || addressesDocument(from) {
			return true
		}
	}

	return false
}

// documentView builds the one-mapping view of the documents. Its values
// are the documents' own nodes, so what a patch leaves alone keeps its
// comments and layout (reuse).
func documentView(docs []*document) (*yaml.Node, error) {
	view := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	named := map[string]*yaml.Node{}

	for _, d := range docs {
		kind := d.kind()
		if kind == "" {
			if d.root != nil {
				view.Content = append(view.Content, d.root.Content...)
			}

			continue
		}

		body := documentBody(d.root, isNamed(kind, d))

		if !isNamed(kind, d) {
			if findKey(view, kind) >= 0 {
				return nil, fmt.Errorf("json patch: the config has document %s twice", kind)
			}

			view.Content = append(view.Content, scalar(kind), body)

			continue
		}

		byName, ok := named[kind]
		if !ok {
			byName = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			named[kind] = byName
			view.Content = append(view.Content, scalar(kind), byName)
		}

		byName.Content = append(byName.Content, scalar(d.name()), body)
	}

	return view, nil
}

// documentBody is a document without its header keys (apiVersion, kind,
// and the name of a named one): what the view holds.
func documentBody(root *yaml.Node, named bool) *yaml.Node {
	body := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: root.Style}

	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "apiVersion", "kind":
			continue
		case "name":
			if named {
				continue
			}
		}

		body.Content = append(body.Content, root.Content[i], root.Content[i+1])
	}

	return body
}

// splitView turns the patched view back into documents: the v1alpha1
// document where it was, the typed documents in their old order, new ones
// after them.
func splitView(old []*document, view *yaml.Node) ([]*document, error) {
	if view.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("json patch: the config must stay a mapping, got %s", kindName(view))
	}

	v1 := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}

	var typed []*document

	for i := 0; i+1 < len(view.Content); i += 2 {
		key, val := view.Content[i].Value, view.Content[i+1]
		if !addressesDocument("/" + key) {
			v1.Content = append(v1.Content, view.Content[i], val)

			continue
		}

		named := isNamedInView(key, old)

		if !named {
			d, err := rebuild(old, key, "", false, val)
			if err != nil {
				return nil, err
			}

			typed = append(typed, d)

			continue
		}

		if val.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("json patch: /%s holds the %s documents by name: want a mapping, got %s", key, key, kindName(val))
		}

		for j := 0; j+1 < len(val.Content); j += 2 {
			d, err := rebuild(old, key, val.Content[j].Value, true, val.Content[j+1])
			if err != nil {
				return nil, err
			}

			typed = append(typed, d)
		}
	}

	var out []*document

	for _, d := range old {
		if d.kind() == "" {
			d.root = v1
			out = append(out, d)

			continue
		}

		if i := slices.IndexFunc(typed, func(t *document) bool { return t.id() == d.id() }); i >= 0 {
			t := typed[i]
			t.head = d.head
			out = append(out, t)
			typed = slices.Delete(typed, i, i+1)
		}
	}

	if !slices.ContainsFunc(old, func(d *document) bool { return d.kind() == "" }) && len(v1.Content) > 0 {
		out = append([]*document{{root: v1}}, out...)
	}

	return append(out, typed...), nil
}

func isNamedInView(kind string, old []*document) bool {
	if named, known := configs.KindNamed(kind); known {
		return named
	}

	for _, d := range old {
		if d.kind() == kind {
			return isNamed(kind, d)
		}
	}

	return false
}

// rebuild makes a document of kind (and name) from its patched body,
// keeping the header nodes of the document it was, if any.
func rebuild(old []*document, kind, name string, named bool, body *yaml.Node) (*document, error) {
	if body.Kind != yaml.MappingNode {
		what := "/" + kind
		if named {
			what += "/" + name
		}

		return nil, fmt.Errorf("json patch: %s is a document: want a mapping, got %s", what, kindName(body))
	}

	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: body.Style}

	var prev *document

	for _, d := range old {
		if d.kind() == kind && (!named || d.name() == name) {
			prev = d

			break
		}
	}

	header := func(key, value string) {
		if prev != nil {
			if j := findKey(prev.root, key); j >= 0 {
				root.Content = append(root.Content, prev.root.Content[j], prev.root.Content[j+1])

				return
			}
		}

		root.Content = append(root.Content, scalar(key), scalar(value))
	}

	header("apiVersion", configs.DocumentAPIVersion)
	header("kind", kind)

	if named {
		root.Content = append(root.Content, scalar("name"), scalar(name))
	}

	root.Content = append(root.Content, body.Content...)

	return &document{root: root}, nil
}

func scalar(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
}
