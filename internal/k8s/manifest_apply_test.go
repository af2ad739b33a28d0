package k8s

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/k8s/apiservertest"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// TestManifestSync runs the ManifestController and the
// ManifestApplyController against a real API server and follows a config
// through edits: an inline manifest changed, removed with pruning off and
// then on, and an extraManifests URL that stops downloading.
func TestManifestSync(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.Options{})

	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}

	var extraDown atomic.Bool

	extra := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if extraDown.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}

		w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {from: url}\n")) //nolint:errcheck // the test reads the effect
	}))
	t.Cleanup(extra.Close)

	g := &graph{t: t, store: bus.NewStore(bus.StoreOptions{})}
	rt := bus.NewRuntime(g.store, bus.RuntimeOptions{})

	for _, c := range []bus.Controller{
		&ManifestController{},
		&ManifestApplyController{
			RetryInterval: 200 * time.Millisecond,
			RESTConfig:    func(*configs.Config) (*rest.Config, error) { return srv.Config, nil },
		},
	} {
		if err := rt.Register(c); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		rt.Run(ctx) //nolint:errcheck // ends with the test
	}()

	t.Cleanup(func() { cancel(); <-done })

	base, _ := generated(t)
	// config returns base with the cluster section changed by fn; the
	// bus keeps the pointer, so each config is a fresh copy.
	config := func(fn func(*configs.ClusterConfig)) *configs.Config {
		cfg := *base
		cl := *base.Cluster
		fn(&cl)
		cfg.Cluster = &cl

		return &cfg
	}

	app := func(data string) []configs.InlineManifest {
		return []configs.InlineManifest{{Name: "app", Contents: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {a: '" + data + "'}\n"}}
	}

	status := func() k8s.ManifestStatusSpec {
		st, err := bus.GetAs[*k8s.ManifestStatus](context.Background(), g.store,
			bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: k8s.ManifestStatusType, ID: k8s.ManifestStatusID})
		if err != nil {
			return k8s.ManifestStatusSpec{}
		}

		return *st.TypedSpec()
	}

	cm := func(name string) *unstructured.Unstructured {
		live, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default").
			Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}

		if err != nil {
			t.Fatal(err)
		}

		return live
	}

	g.setConfig(config(func(c *configs.ClusterConfig) { c.InlineManifests = app("1") }))
	put(g, bus.NewTyped(runtime.NamespaceRuntime, v1alpha1.ServiceType, "etcd", v1alpha1.ServiceSpec{State: "Running", Healthy: true}), supervisor.Owner)

	// The first apply of a whole cluster's bootstrap manifests is slow on
	// a busy machine; later steps only touch a few objects.
	g.waitFor(2*time.Minute, "the manifests applied", func() bool {
		st := status()
		return slices.Contains(st.ManifestsApplied, "99-app") && slices.Contains(st.ObjectsCreated, "ConfigMap default/app") && st.Error == ""
	})

	if st := status(); st.Prune || st.Counts.Created != len(st.ObjectsCreated) || st.Counts.Created < 20 {
		t.Errorf("status after the first apply: %+v", st)
	}

	t.Run("an edit rolls out", func(t *testing.T) {
		g.setConfig(config(func(c *configs.ClusterConfig) { c.InlineManifests = app("2") }))
		g.wait("the update", func() bool {
			return slices.Equal(status().ObjectsUpdated, []string{"ConfigMap default/app"})
		})

		if got, _, _ := unstructured.NestedString(cm("app").Object, "data", "a"); got != "2" {
			t.Errorf("data.a = %q", got)
		}

		if st := status(); len(st.ObjectsCreated) != 0 || st.Counts.Updated != 1 || st.Counts.Unchanged < 20 {
			t.Errorf("status: %+v", st)
		}
	})

	t.Run("removed without prune: kept", func(t *testing.T) {
		g.setConfig(config(func(*configs.ClusterConfig) {}))
		g.wait("kept", func() bool { return slices.Equal(status().ObjectsKept, []string{"ConfigMap default/app"}) })

		if cm("app") == nil {
			t.Error("the ConfigMap was deleted")
		}
	})

	t.Run("prune turned on: pruned", func(t *testing.T) {
		g.setConfig(config(func(c *configs.ClusterConfig) { c.ManifestsPrune = true }))
		g.wait("pruned", func() bool {
			st := status()
			return st.Prune && slices.Equal(st.ObjectsPruned, []string{"ConfigMap default/app"}) && len(st.ObjectsKept) == 0
		})

		if cm("app") != nil {
			t.Error("the ConfigMap is still there")
		}
	})

	t.Run("a manifest that fails to download is not pruned", func(t *testing.T) {
		url := extra.URL + "/extra.yaml"

		g.setConfig(config(func(c *configs.ClusterConfig) { c.ManifestsPrune, c.ExtraManifests = true, []string{url} }))
		g.wait("the extra manifest", func() bool { return slices.Contains(status().ObjectsCreated, "ConfigMap default/extra") })

		extraDown.Store(true)
		g.setConfig(config(func(c *configs.ClusterConfig) {
			c.ManifestsPrune, c.ExtraManifests, c.InlineManifests = true, []string{url}, app("3")
		}))
		g.wait("the next apply", func() bool { return slices.Contains(status().ObjectsCreated, "ConfigMap default/app") })

		st := status()
		if cm("extra") == nil || len(st.ObjectsPruned) != 0 || slices.Contains(st.ManifestsApplied, "99-"+url) {
			t.Errorf("extra %v; status %+v", cm("extra") != nil, st)
		}

		m, err := bus.GetAs[*k8s.Manifest](context.Background(), g.store, bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: k8s.ManifestType, ID: "99-" + url})
		if err != nil || m.TypedSpec().Error == "" || len(m.TypedSpec().Items) != 1 {
			t.Errorf("the failed manifest: %v %+v", err, m)
		}
	})
}

// waitFor is wait with its own deadline.
func (g *graph) waitFor(d time.Duration, what string, cond func() bool) {
	g.t.Helper()

	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			g.t.Fatalf("timed out waiting for %s", what)
		}

		time.Sleep(50 * time.Millisecond)
	}
}

func TestCompleteSet(t *testing.T) {
	manifest := func(id, set string) *k8s.Manifest {
		return bus.NewTyped(k8s.NamespaceControlPlane, k8s.ManifestType, id, k8s.ManifestSpec{Set: set})
	}

	both := manifestSet([]string{"00-a", "99-b"})

	for _, tc := range []struct {
		name string
		list []*k8s.Manifest
		want bool
	}{
		{"none", nil, false},
		{"whole", []*k8s.Manifest{manifest("99-b", both), manifest("00-a", both)}, true},
		{"one not written yet", []*k8s.Manifest{manifest("00-a", both)}, false},
		{"one of the old set", []*k8s.Manifest{manifest("00-a", both), manifest("99-b", manifestSet([]string{"99-b"}))}, false},
		{"one not of the set any more", []*k8s.Manifest{manifest("00-a", both), manifest("99-b", both), manifest("99-c", both)}, false},
	} {
		if got := completeSet(tc.list); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
