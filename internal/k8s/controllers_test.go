package k8s

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// graph runs the control-plane controllers on a real bus, with the
// network's and the supervisor's resources written by the test.
type graph struct {
	t     *testing.T
	store *bus.Store
	root  string
	// apiReady is what the StaticPodController's probe of the API server
	// answers.
	apiReady atomic.Bool
}

func startGraph(t *testing.T) *graph {
	t.Helper()

	root := t.TempDir()
	g := &graph{t: t, store: bus.NewStore(bus.StoreOptions{}), root: root}

	return g.run(
		ControlPlaneController{},
		&RenderSecretsController{Root: root},
		&RenderConfigsController{Root: root},
		&StaticPodController{Root: root, ProbeInterval: 10 * time.Millisecond, APIServerReady: func(context.Context, int) error {
			if !g.apiReady.Load() {
				return errors.New("readyz: 500")
			}

			return nil
		}},
		&StaticPodServerController{},
		NodenameController{},
		NodeIPController{},
		&KubeletSpecController{},
		&ManifestController{},
	)
}

// startGraphOf runs the given controllers on a real bus.
func startGraphOf(t *testing.T, root string, cs ...bus.Controller) *graph {
	t.Helper()

	g := &graph{t: t, store: bus.NewStore(bus.StoreOptions{}), root: root}

	return g.run(cs...)
}

func (g *graph) run(cs ...bus.Controller) *graph {
	t := g.t
	t.Helper()

	rt := bus.NewRuntime(g.store, bus.RuntimeOptions{})

	for _, c := range cs {
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

	return g
}

func put[S any](g *graph, r *bus.Typed[S], owner string) {
	g.t.Helper()

	spec := *r.TypedSpec()

	if _, err := g.store.Modify(context.Background(), r, func(res bus.Resource) error {
		*res.(*bus.Typed[S]).TypedSpec() = spec
		return nil
	}, bus.WithOwner(owner)); err != nil {
		g.t.Fatal(err)
	}
}

func (g *graph) setConfig(cfg *configs.Config) {
	put(g, bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg}), "machined")
}

// wait polls the bus until cond holds; the controllers react to events,
// so this only waits for them.
func (g *graph) wait(what string, cond func() bool) {
	g.t.Helper()

	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			g.t.Fatalf("timed out waiting for %s", what)
		}

		time.Sleep(20 * time.Millisecond)
	}
}

func (g *graph) staticPods() map[string]map[string]any {
	pods, err := bus.ListAs[*k8s.StaticPod](context.Background(), g.store, bus.Kind{Namespace: k8s.NamespaceK8s, Type: k8s.StaticPodType})
	if err != nil {
		g.t.Fatal(err)
	}

	out := map[string]map[string]any{}
	for _, p := range pods {
		out[p.Metadata().ID] = p.TypedSpec().Pod
	}

	return out
}

func annotation(pod map[string]any, key string) string {
	v, _ := pod["metadata"].(map[string]any)["annotations"].(map[string]any)[key].(string)
	return v
}

func TestControlPlaneGraph(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the secrets are chowned to the components' users: needs root")
	}

	cp, _ := generated(t)
	g := startGraph(t)

	g.setConfig(cp)
	// The addresses go first: the secrets wait for a hostname, so their
	// first version already has the address in the certificate. The
	// other order let the test take the versions of a first issue
	// without it, and see the reissue as the flag change's doing.
	put(g, bus.NewTyped(networkres.Namespace, networkres.NodeAddressType, networkres.NodeAddressesCur,
		networkres.NodeAddressSpec{Addresses: []netip.Prefix{netip.MustParsePrefix("10.5.0.2/24")}}), "network")
	put(g, bus.NewTyped(networkres.Namespace, networkres.HostnameStatusType, networkres.HostnameID, networkres.HostnameStatusSpec{Hostname: "CP-1"}), "network")

	g.wait("secrets and configs written", func() bool {
		for _, typ := range []string{k8s.SecretsStatusType, k8s.ConfigStatusType} {
			s, err := bus.GetAs[*k8s.Status](context.Background(), g.store, bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: typ, ID: k8s.StaticPodsStatusID})
			if err != nil || !s.TypedSpec().Ready {
				return false
			}
		}

		return true
	})

	for _, f := range []string{"kube-apiserver/apiserver.crt", "kube-apiserver/encryptionconfig.yaml", "kube-scheduler/kubeconfig"} {
		fi, err := os.Stat(filepath.Join(g.root, constants.SecretsDir, f))
		if err != nil || fi.Mode().Perm() != 0o400 {
			t.Errorf("%s: %v %v", f, fi, err)
		}
	}

	if len(g.staticPods()) != 0 {
		t.Fatal("static pods before etcd is healthy")
	}

	put(g, bus.NewTyped(runtime.NamespaceRuntime, v1alpha1.ServiceType, "etcd", v1alpha1.ServiceSpec{State: "Running", Running: true, Healthy: true}), supervisor.Owner)

	// The API server first: the others follow once it is ready.
	g.wait("the API server's pod", func() bool { return g.staticPods()[k8s.APIServerID] != nil })

	if pods := g.staticPods(); len(pods) != 1 {
		t.Fatalf("static pods before the API server is ready: %d", len(pods))
	}

	g.apiReady.Store(true)
	g.wait("three static pods", func() bool { return len(g.staticPods()) == 3 })

	api := g.staticPods()[k8s.APIServerID]
	cfgVersion, secVersion := annotation(api, "talos.dev/config-version"), annotation(api, "talos.dev/secrets-version")

	if cfgVersion == "" || secVersion == "" || annotation(api, "talos.dev/config-file-version") == "" {
		t.Fatalf("annotations: %v", api["metadata"])
	}

	// The kubelet reads them from the static pod server.
	var url string

	g.wait("the kubelet spec", func() bool {
		ks, err := bus.GetAs[*k8s.KubeletSpec](context.Background(), g.store, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.KubeletSpecType, ID: k8s.KubeletID})
		if err != nil {
			return false
		}

		url, _ = ks.TypedSpec().Config["staticPodURL"].(string)

		return strings.Contains(strings.Join(ks.TypedSpec().Args, " "), "--hostname-override=cp-1 ")
	})

	// The server follows the StaticPods as its controller sees them: all
	// three are served a moment after they exist.
	var body []byte

	g.wait("the static pod server to serve three pods", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}

		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()

		var list struct {
			Kind  string           `yaml:"kind"`
			Items []map[string]any `yaml:"items"`
		}

		return yaml.Unmarshal(body, &list) == nil && list.Kind == "PodList" && len(list.Items) == 3
	})

	// An extra arg bumps the apiserver's config version only. The config
	// is decoded afresh, as every apply makes it: nothing may depend on
	// the old config's pointers (the secrets once did, and every change
	// reissued the certificates and restarted the API server).
	// (The change is made to the v1alpha1 document as written, what an
	// apply sends: the generated config has documents besides it.)
	next := reDecode(t, cp)
	next.V1Alpha1().Cluster.APIServer.ExtraArgs = configs.ArgsOf(map[string]string{"v": "3"})
	g.setConfig(reDecode(t, next))

	g.wait("the apiserver pod with the new flag", func() bool {
		p := g.staticPods()[k8s.APIServerID]
		return p != nil && strings.Contains(strings.Join(command(t, p), " "), "--v=3")
	})

	api = g.staticPods()[k8s.APIServerID]
	if annotation(api, "talos.dev/config-version") == cfgVersion || annotation(api, "talos.dev/secrets-version") != secVersion {
		t.Errorf("versions after a flag change: config %s→%s, secrets %s→%s", cfgVersion, annotation(api, "talos.dev/config-version"),
			secVersion, annotation(api, "talos.dev/secrets-version"))
	}

	if annotation(g.staticPods()[k8s.SchedulerID], "talos.dev/config-version") == "" {
		t.Error("scheduler lost its annotation")
	}

	// Bootstrap manifests are rendered for the control plane.
	g.wait("manifests", func() bool {
		ms, _ := g.store.List(context.Background(), bus.Kind{Namespace: k8s.NamespaceControlPlane, Type: k8s.ManifestType})
		return len(ms) >= 8
	})

	// etcd going away tears the control plane down.
	put(g, bus.NewTyped(runtime.NamespaceRuntime, v1alpha1.ServiceType, "etcd", v1alpha1.ServiceSpec{State: "Failed"}), supervisor.Owner)
	g.wait("no static pods", func() bool { return len(g.staticPods()) == 0 })
}

// reDecode is cfg as an apply gives it: encoded and decoded, sharing no
// pointer with cfg.
func reDecode(t *testing.T, cfg *configs.Config) *configs.Config {
	t.Helper()

	b, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	out, err := configs.Decode(b)
	if err != nil {
		t.Fatal(err)
	}

	return out
}
