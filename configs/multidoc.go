package configs

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"
)

// documents sorts the decoded YAML documents into the v1alpha1 one (nil
// when there is none) and the typed ones, in the order written, recording
// every problem.
func (d *decoder) documents(roots []*yaml.Node) (*Config, []Document) {
	var (
		v1     *Config
		v1Line int
		docs   []Document
		// seen is each typed document's first line, by kind and name.
		seen = map[string]int{}
	)

	for _, root := range roots {
		if root.Kind == yaml.AliasNode {
			root = root.Alias
		}

		if root.Kind != yaml.MappingNode {
			d.fail(root, "a config document must be a mapping, got %s", describe(root))

			continue
		}

		apiVersion, kind := headerValue(root, "apiVersion"), headerValue(root, "kind")

		if kind == nil && apiVersion == nil {
			if v1 != nil {
				d.fail(root, "a second v1alpha1 document (version: v1alpha1; the first starts on line %d): a config has at most one, "+
					"and every other document names its apiVersion and kind", v1Line)

				continue
			}

			v1, v1Line = d.decodeV1Alpha1(root), root.Line

			continue
		}

		doc, id := d.typedDocument(root, apiVersion, kind)
		if doc == nil {
			continue
		}

		if first, dup := seen[id]; dup {
			d.fail(root, "duplicate document %s (the first starts on line %d): each kind appears once%s", id, first, perName(doc))

			continue
		}

		seen[id] = root.Line
		docs = append(docs, doc)
	}

	return v1, docs
}

func perName(doc Document) string {
	if _, ok := doc.(NamedDocument); ok {
		return " per name"
	}

	return ""
}

// headerValue returns the scalar node of a document header key (kind,
// apiVersion, name), or nil.
func headerValue(root *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == key {
			v := root.Content[i+1]
			for v.Kind == yaml.AliasNode {
				v = v.Alias
			}

			return v
		}
	}

	return nil
}

// typedDocument decodes one document that names its kind. It returns nil
// when the kind or apiVersion is not one talosbox reads (the problem is
// recorded), and the document's ID for duplicate detection.
func (d *decoder) typedDocument(root, apiVersion, kind *yaml.Node) (Document, string) {
	switch {
	case kind == nil:
		d.fail(apiVersion, "a document with an apiVersion (%q) but no kind: a typed config document names both "+
			"(apiVersion: %s, kind: HostnameConfig ...), the v1alpha1 document neither (version: v1alpha1)", apiVersion.Value, DocumentAPIVersion)

		return nil, ""
	case kind.Kind != yaml.ScalarNode || kind.Value == "":
		d.fail(kind, "kind: want a document kind such as HostnameConfig, got %s", describe(kind))

		return nil, ""
	}

	ki, known := documentKinds[kind.Value]

	switch {
	case apiVersion == nil:
		d.fail(kind, "document kind %s has no apiVersion: write apiVersion: %s", kind.Value, DocumentAPIVersion)

		return nil, ""
	case apiVersion.Value != DocumentAPIVersion && !known && !isTalosKind(kind.Value):
		d.fail(kind, "apiVersion %q, kind %q is not a machine config document (their apiVersion is %s): "+
			"a Kubernetes manifest goes in cluster.inlineManifests", apiVersion.Value, kind.Value, DocumentAPIVersion)

		return nil, ""
	case apiVersion.Value != DocumentAPIVersion:
		d.fail(apiVersion, "apiVersion %q of document kind %s is not one talosbox reads: write apiVersion: %s",
			apiVersion.Value, kind.Value, DocumentAPIVersion)

		return nil, ""
	case !known:
		d.fail(kind, "%s", unknownKindMessage(kind.Value, apiVersion.Value, d.kindsListed))
		d.kindsListed = true

		return nil, ""
	}

	name := ""
	if ki.named {
		if n := headerValue(root, "name"); n != nil && n.Kind == yaml.ScalarNode {
			name = n.Value
		}
	}

	doc := ki.new()

	// The body is the mapping without its header; the decoder then
	// refuses any other key the kind does not have.
	body := &yaml.Node{Kind: yaml.MappingNode, Tag: root.Tag, Line: root.Line, Column: root.Column}

	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k == "apiVersion" || k == "kind" {
			continue
		}

		body.Content = append(body.Content, root.Content[i], root.Content[i+1])
	}

	saved := d.path
	d.path = []string{documentPath(ki.kind, name, ki.named)}
	d.record(kind)
	d.value(body, reflect.ValueOf(doc).Elem())
	d.path = saved

	return doc, documentID(ki.kind, name, ki.named)
}

func isTalosKind(kind string) bool {
	for _, k := range talosKinds {
		if k == kind {
			return true
		}
	}

	return false
}

// assemble builds the config from its decoded documents: the effective
// v1alpha1 view with the documents folded in, and what was written.
func assemble(v1 *Config, docs []Document) *Config {
	cfg := &Config{}
	if v1 != nil {
		*cfg = *v1
	} else {
		cfg.withoutV1Alpha1 = true
	}

	cfg.Documents = docs

	if len(docs) == 0 {
		return cfg
	}

	// Folding writes into the effective config, so it works on a copy:
	// the v1alpha1 document as written stays for Encode and for the
	// conflict checks.
	written := &Config{}
	if v1 != nil {
		written = v1
	}

	eff := &Config{}
	copyConfig(eff, written)
	eff.Documents = docs
	eff.withoutV1Alpha1 = cfg.withoutV1Alpha1

	if v1 == nil {
		// The node reads a v1alpha1 shape whatever was written.
		eff.Version, eff.Persist = Version, true
	}

	f := &folding{cfg: eff, written: written}
	for _, doc := range docs {
		f.doc = doc
		f.path = DocumentPath(doc)
		doc.fold(f)
	}

	eff.written = written
	eff.aliases = f.aliases
	eff.foldProblems = f.problems
	eff.folded = fingerprint(eff)

	return eff
}

// fingerprint is a digest of the effective v1alpha1 fields, taken when
// they are folded: Encode writes what was written, so a change made to
// the effective fields afterwards would silently not be written, and
// Encode refuses it instead (change V1Alpha1() or the documents).
func fingerprint(c *Config) [sha256.Size]byte {
	n, err := canonical(c)
	if err != nil {
		return [sha256.Size]byte{}
	}

	b, err := yaml.Marshal(n)
	if err != nil {
		return [sha256.Size]byte{}
	}

	return sha256.Sum256(b)
}

// errEffectiveChanged is what Encode says of a config whose effective
// fields changed after its documents were folded into them.
var errEffectiveChanged = errors.New("encode config: its effective fields were changed after the documents were folded into them, " +
	"and Encode writes what was written: change V1Alpha1() or the documents instead")

func (c *Config) checkUnchanged() error {
	if c.written != nil && fingerprint(c) != c.folded {
		return errEffectiveChanged
	}

	return nil
}

// NewConfig builds a config from a v1alpha1 document (nil for none) and
// typed documents, as Decode would from their encoding: what `gen config`
// writes. The documents are folded into the effective view.
func NewConfig(v1 *Config, docs ...Document) *Config {
	return assemble(v1, docs)
}

// folding is the state of folding documents into the effective config.
type folding struct {
	// cfg is the effective config being built; written is the v1alpha1
	// document as written (never nil, empty when there was none).
	cfg, written *Config
	// doc is the document being folded, at path.
	doc  Document
	path string
	// aliases map effective paths to the document paths that set them,
	// so a problem found in the effective config names what was written.
	aliases []alias
	// problems are conflicts between documents and the v1alpha1
	// document, reported by Validate.
	problems []*ValidationError
}

type alias struct {
	effective, written string
}

// alias records that the effective element at effective was set by the
// current document's element at sub ("" for the document itself).
func (f *folding) alias(effective, sub string) {
	f.aliases = append(f.aliases, alias{effective: effective, written: joinPath(f.path, sub)})
}

// conflict records that the current document sets what the v1alpha1
// document (at v1Path) already does.
func (f *folding) conflict(sub, v1Path, what string) {
	f.problems = append(f.problems, &ValidationError{
		Path: joinPath(f.path, sub),
		Msg: fmt.Sprintf("%s is already set in the v1alpha1 document (%s): set it in one place (Talos refuses both)",
			what, v1Path),
	})
}

// problem records a problem found while folding the current document.
func (f *folding) problem(sub, format string, args ...any) {
	f.problems = append(f.problems, &ValidationError{Path: joinPath(f.path, sub), Msg: fmt.Sprintf(format, args...)})
}

func joinPath(base, sub string) string {
	switch {
	case sub == "":
		return base
	case sub[0] == '[':
		return base + sub
	default:
		return base + "." + sub
	}
}

// writtenPath is where the element at the effective path p was written:
// under the document that set it, when one did.
func (c *Config) writtenPath(p string) string {
	best := -1

	for i, a := range c.aliases {
		if underPath(p, a.effective) && (best < 0 || len(a.effective) > len(c.aliases[best].effective)) {
			best = i
		}
	}

	if best < 0 {
		return p
	}

	a := c.aliases[best]

	return a.written + p[len(a.effective):]
}

// underPath reports whether p is prefix or an element below it.
func underPath(p, prefix string) bool {
	if len(p) < len(prefix) || p[:len(prefix)] != prefix {
		return false
	}

	return len(p) == len(prefix) || p[len(prefix)] == '.' || p[len(prefix)] == '['
}

// Edit returns a copy of the config with fn applied to its v1alpha1
// document as written (an empty one when it has none) and the documents
// folded in again: how code changes a decoded config, since Encode writes
// what was written, not the effective fields.
func (c *Config) Edit(fn func(v1 *Config)) *Config {
	v1 := &Config{}
	if w := c.V1Alpha1(); w != nil {
		copyConfig(v1, w)
		v1.Documents, v1.written, v1.aliases, v1.foldProblems, v1.folded = nil, nil, nil, nil, [sha256.Size]byte{}
	}

	fn(v1)

	return assemble(v1, slices.Clone(c.Documents))
}
