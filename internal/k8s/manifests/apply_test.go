package manifests

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/talosbox/talosbox/internal/k8s/apiservertest"
)

// cluster is a real API server and what the test reads it with.
type cluster struct {
	cfg    *rest.Config
	dyn    dynamic.Interface
	mapper *mapper
}

// logger collects Apply's log lines.
type logger struct {
	mu    sync.Mutex
	lines []string
}

func (l *logger) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()

	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logger) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()

	out := l.lines
	l.lines = nil

	return out
}

// get reads obj's live copy; nil when it does not exist.
func (c *cluster) get(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()

	m, err := c.mapper.mapping(t.Context(), obj.GroupVersionKind())
	if err != nil {
		t.Fatalf("%s: %v", describe(obj), err)
	}

	var ri dynamic.ResourceInterface = c.dyn.Resource(m.resource)

	if m.namespaced {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}

		ri = c.dyn.Resource(m.resource).Namespace(ns)
	}

	live, err := ri.Get(t.Context(), obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}

	if err != nil {
		t.Fatalf("get %s: %v", describe(obj), err)
	}

	return live
}

// versions are the resourceVersions of all objects of ms, all of which
// must exist.
func (c *cluster) versions(t *testing.T, ms []Manifest) map[string]string {
	t.Helper()

	out := map[string]string{}

	for _, m := range ms {
		for _, o := range m.Objects {
			live := c.get(t, o)
			if live == nil {
				t.Fatalf("%s of %s does not exist", describe(o), m.ID)
			}

			out[describe(o)] = live.GetResourceVersion()
		}
	}

	return out
}

func mustParse(t *testing.T, id, text string) Manifest {
	t.Helper()

	m, err := Parse(id, []byte(text))
	if err != nil {
		t.Fatal(err)
	}

	return m
}

func TestApply(t *testing.T) {
	start := time.Now()
	srv := apiservertest.Start(t, apiservertest.Options{})
	t.Logf("kube-apiserver ready in %s", time.Since(start).Round(time.Millisecond))

	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}

	mp, err := newMapper(srv.Config, hc)
	if err != nil {
		t.Fatal(err)
	}

	dyn, err := dynamic.NewForConfigAndClient(srv.Config, hc)
	if err != nil {
		t.Fatal(err)
	}

	c := &cluster{cfg: srv.Config, dyn: dyn, mapper: mp}
	log := &logger{}
	ms := render(t, defaults())

	applyStart := time.Now()

	res, err := Apply(t.Context(), c.cfg, ms, ApplyOptions{Logf: log.logf})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}

	t.Logf("first apply in %s", time.Since(applyStart).Round(time.Millisecond))

	if !reflect.DeepEqual(res.Applied, ids(ms)) {
		t.Errorf("applied %v, want %v", res.Applied, ids(ms))
	}

	before := c.versions(t, ms)

	created := log.take()
	if len(created) != len(before) || len(res.Created) != len(before) || len(res.Updated)+len(res.Unchanged) != 0 {
		t.Errorf("logged %d creations, reported %d (%d updated, %d unchanged), for %d objects: %q",
			len(created), len(res.Created), len(res.Updated), len(res.Unchanged), len(before), created)
	}

	if !slices.Contains(res.Created, "Secret kube-system/bootstrap-token-abcdef") || !slices.Contains(res.Created, "ClusterRole flannel") {
		t.Errorf("created %q", res.Created)
	}

	if live := c.get(t, object(t, ms, "DaemonSet", "kube-proxy")); live.GetLabels()[LabelManagedBy] != ValueManagedBy ||
		live.GetAnnotations()[AnnotationManifest] != IDKubeProxy {
		t.Errorf("kube-proxy is not marked as talosbox's: labels %v, annotations %v", live.GetLabels(), live.GetAnnotations())
	}

	for _, want := range []string{"created /v1/Secret/bootstrap-token-abcdef", "created apps/v1/DaemonSet/kube-proxy", "created rbac.authorization.k8s.io/v1/ClusterRoleBinding/system-bootstrap-node-bootstrapper"} {
		if !slices.Contains(created, want) {
			t.Errorf("no %q in the log: %q", want, created)
		}
	}

	if svc := c.get(t, object(t, ms, "Service", "kube-dns")); svc.Object["spec"].(map[string]any)["clusterIP"] != "10.96.0.10" {
		t.Errorf("kube-dns: %v", svc.Object["spec"])
	}

	t.Run("second apply changes nothing", func(t *testing.T) {
		res, err := Apply(t.Context(), c.cfg, ms, ApplyOptions{Logf: log.logf})
		if err != nil || !reflect.DeepEqual(res.Applied, ids(ms)) {
			t.Fatalf("Apply: %v, applied %v", err, res.Applied)
		}

		if lines := log.take(); len(lines) != 0 {
			t.Errorf("second apply logged %q", lines)
		}

		if len(res.Created)+len(res.Updated)+len(res.Pruned)+len(res.Kept) != 0 || len(res.Unchanged) != len(before) {
			t.Errorf("second apply: %+v", res)
		}

		if after := c.versions(t, ms); !reflect.DeepEqual(after, before) {
			t.Errorf("resource versions changed:\n before %v\n after  %v", before, after)
		}
	})

	t.Run("hand edits: talos's fields restored, others' kept", func(t *testing.T) {
		cm := c.get(t, object(t, ms, "ConfigMap", "coredns"))
		if err := unstructured.SetNestedField(cm.Object, ".:53 { errors }", "data", "Corefile"); err != nil {
			t.Fatal(err)
		}

		if err := unstructured.SetNestedField(cm.Object, "mine", "data", "extra"); err != nil {
			t.Fatal(err)
		}

		cm.SetLabels(map[string]string{"team": "dns"}) // drops talosbox's label too

		if _, err := dyn.Resource(gvr(t, c, cm)).Namespace("kube-system").Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}

		res, err := Apply(t.Context(), c.cfg, ms, ApplyOptions{Logf: log.logf})
		if err != nil {
			t.Fatal(err)
		}

		live := c.get(t, cm)
		if got, _, _ := unstructured.NestedString(live.Object, "data", "Corefile"); got == ".:53 { errors }" {
			t.Errorf("the Corefile edit stayed: %q", got)
		}

		if got, _, _ := unstructured.NestedString(live.Object, "data", "extra"); got != "mine" {
			t.Errorf("the added key went: %v", live.Object["data"])
		}

		if l := live.GetLabels(); l["team"] != "dns" || l[LabelManagedBy] != ValueManagedBy {
			t.Errorf("labels %v", l)
		}

		if want := []string{"ConfigMap kube-system/coredns"}; !reflect.DeepEqual(res.Updated, want) || len(res.Created) != 0 {
			t.Errorf("updated %q, created %q; want %q updated", res.Updated, res.Created, want)
		}

		if got, want := log.take(), []string{"updated /v1/ConfigMap/coredns"}; !reflect.DeepEqual(got, want) {
			t.Errorf("log %q, want %q", got, want)
		}
	})

	t.Run("namespace before its objects", func(t *testing.T) {
		m, err := Inline("ns", `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: inline-test
data:
  a: b
---
apiVersion: v1
kind: Namespace
metadata:
  name: inline-test
`)
		if err != nil {
			t.Fatal(err)
		}

		res, err := Apply(t.Context(), c.cfg, []Manifest{m}, ApplyOptions{Logf: log.logf, Inventory: "test-ns"})
		if err != nil || !reflect.DeepEqual(res.Applied, []string{"99-ns"}) {
			t.Fatalf("Apply: %v, applied %v", err, res.Applied)
		}

		want := []string{"created /v1/Namespace/inline-test", "created /v1/ConfigMap/settings"}
		if got := log.take(); !reflect.DeepEqual(got, want) {
			t.Errorf("log %q, want %q", got, want)
		}

		c.versions(t, []Manifest{m})
	})

	t.Run("invalid objects are reported, the rest created", func(t *testing.T) {
		bad := mustParse(t, "99-bad", `apiVersion: v1
kind: ConfigMap
metadata: {name: good-1}
---
apiVersion: v1
kind: Service
metadata: {name: bad-svc}
spec:
  clusterIP: not-an-ip
  ports: [{port: 80}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: no-such-kind}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: good-2}
`)
		good := mustParse(t, "99-good", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good-3}\n")

		res, err := Apply(t.Context(), c.cfg, []Manifest{good, bad}, ApplyOptions{Logf: log.logf, Inventory: "test-bad"})
		if err == nil {
			t.Fatal("Apply of an invalid object succeeded")
		}

		for _, want := range []string{`manifest "99-bad"`, "/v1/Service/default/bad-svc", "example.com/v1/Widget/no-such-kind", "not-an-ip"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}

		if !reflect.DeepEqual(res.Applied, []string{"99-good"}) {
			t.Errorf("applied %v", res.Applied)
		}

		for _, o := range append(bad.Objects[:1:1], bad.Objects[3], good.Objects[0]) {
			if c.get(t, o) == nil {
				t.Errorf("%s was not created", describe(o))
			}
		}

		log.take()
	})

	t.Run("CRD then its objects", func(t *testing.T) {
		m := mustParse(t, "13-crd", `apiVersion: stable.example.com/v1
kind: Gadget
metadata: {name: g1, namespace: default}
spec: {size: 3}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`)

		// The CRD is created first; its kind is served a moment later,
		// so Apply may report it unknown until then, as Talos retries.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()

		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()

		for {
			_, err := Apply(ctx, c.cfg, []Manifest{m}, ApplyOptions{Logf: log.logf, Inventory: "test-crd"})
			if err == nil {
				break
			}

			if !strings.Contains(err.Error(), "stable.example.com/v1/Gadget/default/g1") {
				t.Fatalf("Apply: %v", err)
			}

			select {
			case <-ctx.Done():
				t.Fatalf("the CRD's kind never became usable: %v", err)
			case <-tick.C:
			}
		}

		if got := log.take(); len(got) != 2 || got[0] != "created apiextensions.k8s.io/v1/CustomResourceDefinition/gadgets.stable.example.com" {
			t.Errorf("log %q", got)
		}

		c.mapper.reset()
		c.versions(t, []Manifest{m})
	})

	t.Run("sync", func(t *testing.T) { testSync(t, c) })

	t.Run("other errors stop the run", func(t *testing.T) {
		nobody := srv.ClientConfig(t, "nobody")
		m := mustParse(t, "99-x", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: forbidden}\n")

		_, err := Apply(t.Context(), nobody, []Manifest{m}, ApplyOptions{Logf: log.logf, Inventory: "test-nobody"})

		var status apierrors.APIStatus
		if err == nil || !errors.As(err, &status) || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "/v1/ConfigMap/default/forbidden") {
			t.Errorf("Apply as nobody: %v", err)
		}
	})
}

func gvr(t *testing.T, c *cluster, obj *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()

	m, err := c.mapper.mapping(t.Context(), obj.GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}

	return m.resource
}
