package configs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Two configs are compared by meaning, not text: each is decoded and then
// encoded again, which drops comments, indentation, key order, quoting
// styles and fields spelled at their zero value, so only what the node
// would act on differently is left to compare.

// Path is where a value sits in a config: mapping keys, and "[i]" for the
// i-th item of a list. Keys may contain dots (sysctl names, registry
// hosts), so code matches paths element by element, not as text.
type Path []string

// String joins the elements with dots, list indexes attached:
// "machine.network.interfaces[0].addresses".
func (p Path) String() string {
	var sb strings.Builder

	for i, e := range p {
		if i > 0 && !isIndex(e) {
			sb.WriteByte('.')
		}

		sb.WriteString(e)
	}

	return sb.String()
}

func isIndex(e string) bool { return strings.HasPrefix(e, "[") && strings.HasSuffix(e, "]") }

// ChangeKind says whether a path was added, removed or changed.
type ChangeKind byte

// Change kinds, named by the mark Change.String puts in front.
const (
	Modified ChangeKind = '~'
	Added    ChangeKind = '+'
	Removed  ChangeKind = '-'
)

// Change is one value that differs between two configs.
type Change struct {
	Kind ChangeKind
	Path Path
	// Old and New are the values as one line of flow YAML (strings
	// double-quoted); the side a path is missing from is "".
	Old, New string
	// Where is the path as written when a typed document set it
	// (`HostnameConfig.hostname` for machine.network.hostname), "" when
	// it is Path.
	Where string
}

// String is the change as `talosctl apply-config --dry-run` prints it:
// `~ machine.network.hostname: "a" -> "b"`, `+ path: value`, `- path: value`.
func (c Change) String() string {
	where := c.Path.String()
	if c.Where != "" {
		where = c.Where
	}

	switch c.Kind {
	case Added:
		return fmt.Sprintf("+ %s: %s", where, c.New)
	case Removed:
		return fmt.Sprintf("- %s: %s", where, c.Old)
	default:
		return fmt.Sprintf("~ %s: %s -> %s", where, c.Old, c.New)
	}
}

// Compare lists what differs from old to new, in the order of the config
// document: a changed value where both have the path, every leaf of a
// subtree only one of them has, and lists item by item (lists of plain
// values, such as certSANs, as a whole). A nil config compares as an empty
// one. No changes means the configs mean the same.
//
// The effective configs are compared, so a setting moved from the
// v1alpha1 document into a typed document (or back) is no change; each
// change made through a document says where it was written (Where). The
// documents that are not wholly folded into v1alpha1 fields are compared
// too, under their DocumentPath as the first path element.
func Compare(old, new *Config) ([]Change, error) {
	a, err := comparable(old)
	if err != nil {
		return nil, fmt.Errorf("compare configs: old: %w", err)
	}

	b, err := comparable(new)
	if err != nil {
		return nil, fmt.Errorf("compare configs: new: %w", err)
	}

	var out []Change

	compareNodes(nil, a, b, &out)

	for i := range out {
		c := &out[i]

		from := new
		if c.Kind == Removed {
			from = old
		}

		if from != nil {
			if w := from.writtenPath(c.Path.String()); w != c.Path.String() {
				c.Where = w
			}
		}
	}

	return out, nil
}

// comparable is the tree Compare walks: the effective config, and the
// documents that are not wholly folded into it.
func comparable(c *Config) (*yaml.Node, error) {
	n, err := canonical(c)
	if err != nil || c == nil {
		return n, err
	}

	for _, doc := range c.Documents {
		if documentKinds[doc.Kind()].folded {
			continue
		}

		if r, ok := doc.(residual); ok {
			if doc = r.residue(); doc == nil {
				continue
			}
		}

		var body yaml.Node
		if err := body.Encode(quotedForEncoding(doc)); err != nil {
			return nil, err
		}

		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: strTag, Value: DocumentPath(doc)}, &body)
	}

	return n, nil
}

// Diff is Compare as text, one change per line; "" when the configs mean
// the same.
func Diff(old, new *Config) (string, error) {
	changes, err := Compare(old, new)
	if err != nil {
		return "", err
	}

	var sb strings.Builder

	for _, c := range changes {
		sb.WriteString(c.String())
		sb.WriteByte('\n')
	}

	return sb.String(), nil
}

// canonical is the node tree Encode would print for c: struct fields in
// declaration order, map keys sorted, zero values left out.
func canonical(c *Config) (*yaml.Node, error) {
	if c == nil {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, nil
	}

	var n yaml.Node
	if err := n.Encode(quotedForEncoding(c)); err != nil {
		return nil, err
	}

	return &n, nil
}

func compareNodes(path Path, a, b *yaml.Node, out *[]Change) {
	switch {
	case a == nil && b == nil:
	case a == nil:
		leaves(path, b, Added, out)
	case b == nil:
		leaves(path, a, Removed, out)
	case a.Kind == yaml.MappingNode && b.Kind == yaml.MappingNode:
		compareMappings(path, a, b, out)
	case a.Kind == yaml.SequenceNode && b.Kind == yaml.SequenceNode && (hasCollections(a) || hasCollections(b)):
		for i := range max(len(a.Content), len(b.Content)) {
			compareNodes(with(path, "["+strconv.Itoa(i)+"]"), item(a, i), item(b, i), out)
		}
	case !sameNode(a, b):
		*out = append(*out, Change{Kind: Modified, Path: path, Old: flow(a), New: flow(b)})
	}
}

// compareMappings walks the keys of both in document order. Both trees
// come from the same encoder, so the keys they share are in the same
// order, and each key only old has is reported where it stood.
func compareMappings(path Path, a, b *yaml.Node, out *[]Change) {
	inB := map[string]bool{}
	for i := 0; i+1 < len(b.Content); i += 2 {
		inB[b.Content[i].Value] = true
	}

	aVals := map[string]*yaml.Node{}
	for i := 0; i+1 < len(a.Content); i += 2 {
		aVals[a.Content[i].Value] = a.Content[i+1]
	}

	ai := 0
	removedUpTo := func(stop string) {
		for ; ai+1 < len(a.Content); ai += 2 {
			k := a.Content[ai].Value
			if k == stop {
				ai += 2
				return
			}

			if !inB[k] {
				leaves(with(path, k), a.Content[ai+1], Removed, out)
			}
		}
	}

	for i := 0; i+1 < len(b.Content); i += 2 {
		k := b.Content[i].Value

		if _, ok := aVals[k]; ok {
			removedUpTo(k)
		}

		compareNodes(with(path, k), aVals[k], b.Content[i+1], out)
	}

	removedUpTo("")
}

// leaves reports every leaf under n as added or removed: a new mapping
// shows as the values it sets, which is what the node acts on.
func leaves(path Path, n *yaml.Node, kind ChangeKind, out *[]Change) {
	if n.Kind == yaml.MappingNode && len(n.Content) > 0 {
		for i := 0; i+1 < len(n.Content); i += 2 {
			leaves(with(path, n.Content[i].Value), n.Content[i+1], kind, out)
		}

		return
	}

	c := Change{Kind: kind, Path: path}
	if kind == Added {
		c.New = flow(n)
	} else {
		c.Old = flow(n)
	}

	*out = append(*out, c)
}

// with returns path and e in a new slice: changes keep their paths, so
// appends must never share a backing array.
func with(path Path, e string) Path {
	return append(path[:len(path):len(path)], e)
}

func item(n *yaml.Node, i int) *yaml.Node {
	if i < len(n.Content) {
		return n.Content[i]
	}

	return nil
}

func hasCollections(seq *yaml.Node) bool {
	for _, c := range seq.Content {
		if c.Kind == yaml.MappingNode || c.Kind == yaml.SequenceNode {
			return true
		}
	}

	return false
}

// sameNode compares values, not spellings: the tag and text of scalars,
// and the items of collections in order.
func sameNode(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || a.Value != b.Value || len(a.Content) != len(b.Content) {
		return false
	}

	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}

	return true
}

// flow prints a value on one line: strings double-quoted so "" and " "
// show, collections in flow style.
func flow(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() == "!!str" {
			return strconv.Quote(n.Value)
		}

		return n.Value
	}

	out, err := yaml.Marshal(flowStyle(n))
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}

	// yaml.v3 does not wrap lines, so a flow collection is one line.
	return strings.TrimSuffix(string(out), "\n")
}

// flowStyle copies n with every collection in flow style.
func flowStyle(n *yaml.Node) *yaml.Node {
	cp := *n
	if cp.Kind == yaml.MappingNode || cp.Kind == yaml.SequenceNode {
		cp.Style |= yaml.FlowStyle
	}

	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		cp.Content[i] = flowStyle(c)
	}

	return &cp
}

// SameWritten reports whether two configs were written the same way, by
// meaning: the v1alpha1 document and each typed document equal (layout,
// comments, key and document order aside). Two configs can mean the same
// (Compare finds no change) and still be written differently, when a
// setting moved between the v1alpha1 document and a typed one.
func SameWritten(a, b *Config) bool {
	ta, errA := writtenTree(a)
	tb, errB := writtenTree(b)

	return errA == nil && errB == nil && sameNode(ta, tb)
}

// writtenTree is what was written as one mapping: the v1alpha1 document
// under "v1alpha1", each typed document under its DocumentPath, sorted.
func writtenTree(c *Config) (*yaml.Node, error) {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if c == nil {
		return out, nil
	}

	if v1 := c.V1Alpha1(); v1 != nil {
		n, err := canonical(v1)
		if err != nil {
			return nil, err
		}

		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: strTag, Value: Version}, n)
	}

	docs := slices.Clone(c.Documents)
	slices.SortStableFunc(docs, func(x, y Document) int { return strings.Compare(DocumentPath(x), DocumentPath(y)) })

	for _, doc := range docs {
		n, err := documentNode(doc)
		if err != nil {
			return nil, err
		}

		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: strTag, Value: DocumentPath(doc)}, n)
	}

	return out, nil
}
