package manifests

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// syncStep is one Apply of a sync case and what it must report.
type syncStep struct {
	ms    []Manifest
	prune bool
	hold  []string
	// before runs ahead of the Apply: what users do meanwhile.
	before func(t *testing.T, c *cluster)
	// wantErr is part of the error the Apply must return ("": none).
	wantErr string
	// want is compared but for Applied.
	want  Result
	check func(t *testing.T, c *cluster)
}

// testSync runs the cases of keeping the manifests in sync: edits roll
// out, and what no manifest holds any more is pruned or kept. Each case
// has its own inventory, so cases never see each other's objects.
func testSync(t *testing.T, c *cluster) {
	cm := func(name, data string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {%s}\n", name, data)
	}

	inline := func(name string, docs ...string) Manifest {
		m, err := Inline(name, strings.Join(docs, "---\n"))
		if err != nil {
			t.Fatal(err)
		}

		return m
	}

	exists := func(kind, ns, name string, want bool) func(t *testing.T, c *cluster) {
		return func(t *testing.T, c *cluster) {
			t.Helper()

			if got := c.getRef(t, kind, ns, name) != nil; got != want {
				t.Errorf("%s %s/%s exists: %v, want %v", kind, ns, name, got, want)
			}
		}
	}

	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.sync.example.com}
spec:
  group: sync.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

	for n, tc := range []struct {
		name  string
		steps []syncStep
	}{
		{"an edited ConfigMap is updated, then unchanged", []syncStep{
			{ms: []Manifest{inline("upd", cm("upd", "a: '1'"))}, want: Result{Created: []string{"ConfigMap default/upd"}}},
			{
				ms:    []Manifest{inline("upd", cm("upd", "a: '2'"))},
				want:  Result{Updated: []string{"ConfigMap default/upd"}},
				check: data("ConfigMap", "default", "upd", map[string]any{"a": "2"}),
			},
			{ms: []Manifest{inline("upd", cm("upd", "a: '2'"))}, want: Result{Unchanged: []string{"ConfigMap default/upd"}}},
		}},
		{"a removed manifest is pruned", []syncStep{
			{
				ms: []Manifest{inline("p-keep", cm("p-keep", "")),
					inline("p-gone", cm("p-gone", ""), "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: p-gone}\n")},
				// Manifests go in ID order.
				want: Result{Created: []string{"ConfigMap default/p-gone", "ServiceAccount default/p-gone", "ConfigMap default/p-keep"}},
			},
			{
				ms: []Manifest{inline("p-keep", cm("p-keep", ""))}, prune: true,
				want: Result{Unchanged: []string{"ConfigMap default/p-keep"},
					Pruned: []string{"ConfigMap default/p-gone", "ServiceAccount default/p-gone"}},
				check: exists("ConfigMap", "default", "p-gone", false),
			},
			// The inventory forgot them.
			{ms: []Manifest{inline("p-keep", cm("p-keep", ""))}, prune: true, want: Result{Unchanged: []string{"ConfigMap default/p-keep"}}},
		}},
		{"without prune a removed manifest is kept, until prune is on", []syncStep{
			{ms: []Manifest{inline("k-keep", cm("k-keep", "")), inline("k-gone", cm("k-gone", ""))},
				want: Result{Created: []string{"ConfigMap default/k-gone", "ConfigMap default/k-keep"}}},
			{
				ms:    []Manifest{inline("k-keep", cm("k-keep", ""))},
				want:  Result{Unchanged: []string{"ConfigMap default/k-keep"}, Kept: []string{"ConfigMap default/k-gone"}},
				check: exists("ConfigMap", "default", "k-gone", true),
			},
			{ms: []Manifest{inline("k-keep", cm("k-keep", ""))},
				want: Result{Unchanged: []string{"ConfigMap default/k-keep"}, Kept: []string{"ConfigMap default/k-gone"}}},
			{
				ms: []Manifest{inline("k-keep", cm("k-keep", ""))}, prune: true,
				want:  Result{Unchanged: []string{"ConfigMap default/k-keep"}, Pruned: []string{"ConfigMap default/k-gone"}},
				check: exists("ConfigMap", "default", "k-gone", false),
			},
		}},
		{"objects that are not talosbox's are never pruned", []syncStep{
			{
				before: func(t *testing.T, c *cluster) { c.create(t, cm("hand-made", "")) },
				ms:     []Manifest{inline("n", cm("n-a", ""), cm("n-b", ""))},
				want:   Result{Created: []string{"ConfigMap default/n-a", "ConfigMap default/n-b"}},
			},
			{
				// A user takes n-b over by removing the label.
				before: func(t *testing.T, c *cluster) {
					c.patch(t, "n-b", `{"metadata":{"labels":{"talos.dev/managed-by":null}}}`)
				},
				ms: []Manifest{inline("n", cm("n-c", ""))}, prune: true,
				want: Result{Created: []string{"ConfigMap default/n-c"}, Pruned: []string{"ConfigMap default/n-a"}},
				check: func(t *testing.T, c *cluster) {
					exists("ConfigMap", "default", "hand-made", true)(t, c)
					exists("ConfigMap", "default", "n-b", true)(t, c)
				},
			},
			// n-b left the inventory: not even reported kept.
			{ms: []Manifest{inline("n", cm("n-c", ""))}, want: Result{Unchanged: []string{"ConfigMap default/n-c"}}},
		}},
		{"a user's fields stay through an update", []syncStep{
			{ms: []Manifest{inline("u", cm("u", "a: '1'"))}, want: Result{Created: []string{"ConfigMap default/u"}}},
			{
				before: func(t *testing.T, c *cluster) {
					c.patch(t, "u", `{"metadata":{"labels":{"owner":"me"}},"data":{"b":"user"}}`)
				},
				ms:   []Manifest{inline("u", cm("u", "a: '2'"))},
				want: Result{Updated: []string{"ConfigMap default/u"}},
				check: func(t *testing.T, c *cluster) {
					data("ConfigMap", "default", "u", map[string]any{"a": "2", "b": "user"})(t, c)

					if l := c.getRef(t, "ConfigMap", "default", "u").GetLabels(); l["owner"] != "me" || l[LabelManagedBy] != ValueManagedBy {
						t.Errorf("labels %v", l)
					}
				},
			},
		}},
		{"Namespaces and CRDs are kept even with prune", []syncStep{
			{
				ms: []Manifest{inline("ns", "apiVersion: v1\nkind: Namespace\nmetadata: {name: sync-ns}\n",
					"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: in-ns, namespace: sync-ns}\n", crd)},
				want: Result{Created: []string{"Namespace sync-ns", "CustomResourceDefinition widgets.sync.example.com", "ConfigMap sync-ns/in-ns"}},
			},
			{
				prune: true,
				want: Result{Pruned: []string{"ConfigMap sync-ns/in-ns"},
					Kept: []string{"Namespace sync-ns", "CustomResourceDefinition widgets.sync.example.com"}},
				check: exists("Namespace", "", "sync-ns", true),
			},
		}},
		{"a held manifest's objects are neither pruned nor kept", []syncStep{
			{ms: []Manifest{inline("h1", cm("h-a", "")), inline("h2", cm("h-b", ""))},
				want: Result{Created: []string{"ConfigMap default/h-a", "ConfigMap default/h-b"}}},
			{
				ms: []Manifest{inline("h1", cm("h-a", ""))}, prune: true, hold: []string{"99-h2"},
				want:  Result{Unchanged: []string{"ConfigMap default/h-a"}},
				check: exists("ConfigMap", "default", "h-b", true),
			},
		}},
		{"errors hold pruning back", []syncStep{
			{ms: []Manifest{inline("e1", cm("e-a", "")), inline("e2", cm("e-b", ""))},
				want: Result{Created: []string{"ConfigMap default/e-a", "ConfigMap default/e-b"}}},
			{
				ms: []Manifest{inline("e1", cm("e-a", ""),
					"apiVersion: v1\nkind: Service\nmetadata: {name: e-bad}\nspec: {clusterIP: not-an-ip, ports: [{port: 80}]}\n")},
				prune: true, wantErr: "not-an-ip",
				want:  Result{Unchanged: []string{"ConfigMap default/e-a"}, Kept: []string{"ConfigMap default/e-b"}},
				check: exists("ConfigMap", "default", "e-b", true),
			},
		}},
		{"a key removed from a Secret's stringData goes", []syncStep{
			{ms: []Manifest{inline("s", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {a: '1', b: '2'}\n")},
				want: Result{Created: []string{"Secret default/s"}}},
			{
				ms:    []Manifest{inline("s", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {a: '1'}\n")},
				want:  Result{Updated: []string{"Secret default/s"}},
				check: data("Secret", "default", "s", map[string]any{"a": base64.StdEncoding.EncodeToString([]byte("1"))}),
			},
			{ms: []Manifest{inline("s", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {a: '1'}\n")},
				want: Result{Unchanged: []string{"Secret default/s"}}},
		}},
	} {
		inventory := fmt.Sprintf("test-sync-%d", n)

		t.Run(tc.name, func(t *testing.T) {
			for i, s := range tc.steps {
				if s.before != nil {
					s.before(t, c)
				}

				res, err := Apply(t.Context(), c.cfg, s.ms, ApplyOptions{Prune: s.prune, Hold: s.hold, Inventory: inventory})

				switch {
				case s.wantErr == "" && err != nil:
					t.Fatalf("step %d: %v", i+1, err)
				case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
					t.Fatalf("step %d: error %v, want one with %q", i+1, err, s.wantErr)
				}

				for _, f := range []struct {
					name      string
					got, want []string
				}{
					{"created", res.Created, s.want.Created}, {"updated", res.Updated, s.want.Updated},
					{"unchanged", res.Unchanged, s.want.Unchanged}, {"pruned", res.Pruned, s.want.Pruned},
					{"kept", res.Kept, s.want.Kept},
				} {
					if !slices.Equal(f.got, f.want) {
						t.Errorf("step %d: %s %q, want %q", i+1, f.name, f.got, f.want)
					}
				}

				if s.check != nil {
					s.check(t, c)
				}

				if t.Failed() {
					t.FailNow()
				}
			}
		})
	}
}

// data checks an object's data is exactly want.
func data(kind, ns, name string, want map[string]any) func(t *testing.T, c *cluster) {
	return func(t *testing.T, c *cluster) {
		t.Helper()

		live := c.getRef(t, kind, ns, name)
		if live == nil {
			t.Fatalf("%s %s/%s does not exist", kind, ns, name)
		}

		got, _, _ := unstructured.NestedMap(live.Object, "data")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %s/%s data %v, want %v", kind, ns, name, got, want)
		}
	}
}

// getRef reads a core or CRD object by kind (v1 for the core ones).
func (c *cluster) getRef(t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()

	apiVersion := "v1"
	if kind == "CustomResourceDefinition" {
		apiVersion = "apiextensions.k8s.io/v1"
	}

	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(ns)
	obj.SetName(name)

	return c.get(t, obj)
}

// create makes a default-namespace object as a user would, unlabelled.
func (c *cluster) create(t *testing.T, doc string) {
	t.Helper()

	m := mustParse(t, "user", doc)
	obj := m.Objects[0]

	if _, err := c.dyn.Resource(gvr(t, c, obj)).Namespace(metav1.NamespaceDefault).Create(t.Context(), obj,
		metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
}

// patch merge-patches the ConfigMap default/name as `kubectl` would.
func (c *cluster) patch(t *testing.T, name, patch string) {
	t.Helper()

	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")

	if _, err := c.dyn.Resource(gvr(t, c, obj)).Namespace(metav1.NamespaceDefault).Patch(t.Context(), name, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
}
