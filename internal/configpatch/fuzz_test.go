package configpatch

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"gopkg.in/yaml.v3"
)

// FuzzJSONPatch checks Apply against the JSON patch library run directly on
// the JSON form of the document: the YAML conversion and node reuse must
// neither change the outcome nor the resulting value.
func FuzzJSONPatch(f *testing.F) {
	f.Add(base, `[{"op": "replace", "path": "/machine/type", "value": "worker"}]`)
	f.Add("a: [1, 2]\n", `[{"op": "move", "from": "/a/0", "path": "/a/-"}]`)

	f.Fuzz(func(t *testing.T, doc, patch string) {
		ps, err := Parse([]byte(patch))
		if err != nil || !ps[0].IsJSONPatch() {
			return
		}

		got, applyErr := Apply([]byte(doc), ps...)

		root, single, err := parseDocument([]byte(doc))
		if err != nil {
			if applyErr == nil {
				t.Fatalf("Apply accepted a config parseDocuments rejects: %v", err)
			}

			return
		}

		if !single || needsView(nil, ps[0].ops) {
			// Several documents, or a path addressing a document by its
			// kind (/KubeletConfig/...): talosbox's own extension, which
			// the library has no counterpart for. What Apply makes of it
			// must still read back as a config's documents.
			if applyErr == nil {
				if _, err := parseDocuments(got); err != nil {
					t.Fatalf("Apply made a config that does not parse: %v\n%s", err, got)
				}
			}

			return
		}

		if root == nil {
			root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}

		docJSON, err := toJSON(root)
		if err != nil {
			return // not representable as JSON; Apply must have failed too
		}

		opts := jsonpatch.NewApplyOptions()
		opts.AccumulatedCopySizeLimit = maxJSONSize
		want, wantErr := ps[0].ops.ApplyWithOptions(docJSON, opts)

		if (applyErr == nil) != (wantErr == nil) {
			t.Fatalf("Apply error %v, library error %v", applyErr, wantErr)
		}

		if applyErr != nil {
			return
		}

		var out yaml.Node
		if err := yaml.Unmarshal(got, &out); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, got)
		}

		gotJSON, err := toJSON(&out)
		if err != nil {
			t.Fatalf("output not convertible: %v\n%s", err, got)
		}

		if !jsonEqual(t, gotJSON, want) {
			t.Fatalf("result differs:\nyaml path: %s\nlibrary:   %s", gotJSON, want)
		}
	})
}

// FuzzStrategicMerge checks that a merge never produces invalid YAML, that
// every scalar the patch sets through mappings is in the result, and that
// surviving top-level keys keep their order.
func FuzzStrategicMerge(f *testing.F) {
	f.Add(base, "machine:\n  type: worker\n  network:\n    interfaces:\n      - interface: eth0\n        mtu: 9000\n")
	f.Add("a: {b: 1}\n", "a:\n  $patch: delete\n")

	f.Fuzz(func(t *testing.T, doc, patch string) {
		ps, err := Parse([]byte(patch))
		if err != nil || ps[0].IsJSONPatch() {
			return
		}

		got, err := Apply([]byte(doc), ps...)
		if err != nil {
			return
		}

		res, single, err := parseDocument(got)
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, got)
		}

		orig, singleOrig, _ := parseDocument([]byte(doc))
		if !single || !singleOrig || !convertible(orig) || len(ps) != 1 || !convertible(ps[0].merge) {
			return // duplicate keys or aliases make the expectations ambiguous
		}

		checkLeaves(t, ps[0].merge, res, got)
		checkOrder(t, orig, res, got)
	})
}

// parseDocument returns the root of a config of one v1alpha1 document
// (nil when empty); single is false for any other config, which the
// fuzz targets' expectations do not cover.
func parseDocument(doc []byte) (root *yaml.Node, single bool, err error) {
	docs, err := parseDocuments(doc)
	if err != nil {
		return nil, false, err
	}

	switch {
	case len(docs) == 0:
		return nil, true, nil
	case len(docs) > 1 || docs[0].kind() != "":
		return nil, false, nil
	default:
		return docs[0].root, true, nil
	}
}

func convertible(n *yaml.Node) bool {
	if n == nil {
		return true
	}

	if _, err := toJSON(n); err != nil {
		return false
	}

	var hasAlias func(*yaml.Node) bool

	hasAlias = func(n *yaml.Node) bool {
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			return true
		}

		for _, c := range n.Content {
			if hasAlias(c) {
				return true
			}
		}

		return false
	}

	return !hasAlias(n)
}

func checkLeaves(t *testing.T, patch, res *yaml.Node, out []byte) {
	t.Helper()

	for i := 0; i+1 < len(patch.Content); i += 2 {
		k, v := patch.Content[i], patch.Content[i+1]
		if k.Value == directiveKey {
			continue
		}

		j := findKey(res, k.Value)

		switch {
		case isDelete(v):
			if j >= 0 {
				t.Fatalf("key %q was deleted but is present:\n%s", k.Value, out)
			}
		case j < 0:
			t.Fatalf("key %q from the patch is missing:\n%s", k.Value, out)
		case v.Kind == yaml.MappingNode:
			if r := res.Content[j+1]; r.Kind == yaml.MappingNode {
				checkLeaves(t, v, r, out)
			} else {
				t.Fatalf("key %q should hold a mapping:\n%s", k.Value, out)
			}
		case v.Kind == yaml.ScalarNode:
			if !sameScalar(v, res.Content[j+1]) {
				t.Fatalf("key %q = %q, want %q:\n%s", k.Value, res.Content[j+1].Value, v.Value, out)
			}
		}
	}
}

func checkOrder(t *testing.T, orig, res *yaml.Node, out []byte) {
	t.Helper()

	if orig == nil || orig.Kind != yaml.MappingNode || res.Kind != yaml.MappingNode {
		return
	}

	last := -1

	for i := 0; i+1 < len(orig.Content); i += 2 {
		j := findKey(res, orig.Content[i].Value)
		if j < 0 {
			continue
		}

		if j < last {
			t.Fatalf("key %q moved before an earlier key:\n%s", orig.Content[i].Value, out)
		}

		last = j
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()

	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("bad JSON %s: %v", a, err)
	}

	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}

	return reflect.DeepEqual(va, vb)
}
