package render_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/render"
)

// flagsOf are the command-line flags an artifact holds, in order: the
// lines of an .args file, or every "--" string of a YAML file's
// documents (a static pod's command, a DaemonSet's).
func flagsOf(t *testing.T, arts *render.Artifacts, p string) []string {
	t.Helper()

	data := file(t, arts, p)
	if strings.HasSuffix(p, ".args") {
		return strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	}

	var out []string

	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && strings.HasPrefix(n.Value, "--") {
			out = append(out, n.Value)
		}

		for _, c := range n.Content {
			walk(c)
		}
	}

	dec := yaml.NewDecoder(bytes.NewReader([]byte(data)))

	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", p, err)
		}

		walk(&n)
	}

	return out
}

// patched is cfg's YAML with a strategic merge patch applied, loaded as a
// node loads it (configs' rules and the renderers' checks).
func patched(t *testing.T, cfg *configs.Config, patch string) *configs.Config {
	t.Helper()

	data, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	data = applyPatches(t, data, patch)

	out, _, err := render.Load(data, configs.ModeMetal)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}

	return out
}

// applyPatches applies each patch in turn, as talosctl's --config-patch does.
func applyPatches(t *testing.T, data []byte, patches ...string) []byte {
	t.Helper()

	for _, p := range patches {
		ps, err := configpatch.Parse([]byte(p))
		if err != nil {
			t.Fatal(err)
		}

		if data, err = configpatch.Apply(data, ps...); err != nil {
			t.Fatal(err)
		}
	}

	return data
}

// TestRenderRepeatedFlags: an extraArgs list is the flag repeated, in
// order, on every component's command line; an empty list leaves the
// flag out, default included; an additive flag (Talos's) gets the list's
// items in its one value.
func TestRenderRepeatedFlags(t *testing.T) {
	cp, _ := gen(t)

	cfg := patched(t, cp, `machine:
  kubelet:
    extraArgs:
      node-labels: [a=b, c=d]
      feature-gates: [AllBeta=true, AllAlpha=false]
cluster:
  apiServer:
    extraArgs:
      runtime-config: [api/all=true, scheduling.k8s.io/v1alpha1=true]
      enable-admission-plugins: [AlwaysPullImages, NodeRestriction]
      v: ["2"]
  controllerManager:
    extraArgs:
      controllers: ["*", "-ttl"]
  scheduler:
    extraArgs:
      authorization-always-allow-paths: [/healthz, /readyz]
      profiling: []
  proxy:
    extraArgs:
      ipvs-exclude-cidrs: [10.0.0.0/8, 192.168.0.0/16]
  etcd:
    extraArgs:
      feature-gates: [InitialCorruptCheck=true, CompactHashCheck=true]
`)

	arts := mustRender(t, cfg, render.Options{})

	for _, tc := range []struct {
		path   string
		want   []string // in a row
		absent string   // no flag starts with it
	}{
		{path: "static-pods/kube-apiserver.yaml", want: []string{"--runtime-config=api/all=true", "--runtime-config=scheduling.k8s.io/v1alpha1=true"}},
		{path: "static-pods/kube-apiserver.yaml", want: []string{"--enable-admission-plugins=NodeRestriction,AlwaysPullImages"}},
		{path: "static-pods/kube-apiserver.yaml", want: []string{"--v=2"}},
		{path: "static-pods/kube-controller-manager.yaml", want: []string{"--controllers=*,tokencleaner,-ttl"}},
		{path: "static-pods/kube-scheduler.yaml", want: []string{"--authorization-always-allow-paths=/healthz", "--authorization-always-allow-paths=/readyz"}, absent: "--profiling"},
		{path: "services/kubelet.args", want: []string{"--feature-gates=AllBeta=true", "--feature-gates=AllAlpha=false"}},
		{path: "services/kubelet.args", want: []string{"--node-labels=a=b", "--node-labels=c=d"}},
		{path: "services/etcd.args", want: []string{"--feature-gates=InitialCorruptCheck=true", "--feature-gates=CompactHashCheck=true"}},
		{path: "manifests/10-kube-proxy.yaml", want: []string{"--ipvs-exclude-cidrs=10.0.0.0/8", "--ipvs-exclude-cidrs=192.168.0.0/16"}},
	} {
		flags := flagsOf(t, arts, tc.path)

		i := slices.Index(flags, tc.want[0])
		if i < 0 || i+len(tc.want) > len(flags) || !slices.Equal(flags[i:i+len(tc.want)], tc.want) {
			t.Errorf("%s: no %q in a row in %q", tc.path, tc.want, flags)
		}

		if tc.absent != "" && slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, tc.absent) }) {
			t.Errorf("%s: %s is there: %q", tc.path, tc.absent, flags)
		}
	}
}

// TestRenderRepeatedFlagsFromDocuments: the Kubernetes documents' lists
// reach the command lines too, kube-proxy's from its configuration file
// included.
func TestRenderRepeatedFlagsFromDocuments(t *testing.T) {
	data := applyPatches(t, talosKnownKinds(t, "v1.14/base-controlplane.yaml"),
		"apiVersion: v1alpha1\nkind: KubeletConfig\nextraArgs:\n  node-labels: [a=b, c=d]\n",
		"apiVersion: v1alpha1\nkind: KubeAPIServerConfig\nextraArgs:\n  runtime-config: [api/all=true, scheduling.k8s.io/v1alpha1=true]\n",
		"apiVersion: v1alpha1\nkind: KubeProxyConfig\nextraArgs:\n  ipvs-exclude-cidrs: [10.0.0.0/8, 192.168.0.0/16]\n",
	)

	cfg, _, err := render.Load(data, configs.ModeContainer)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}

	arts := mustRender(t, cfg, render.Options{Mode: configs.ModeContainer})

	for path, want := range map[string][]string{
		"services/kubelet.args":           {"--node-labels=a=b", "--node-labels=c=d"},
		"static-pods/kube-apiserver.yaml": {"--runtime-config=api/all=true", "--runtime-config=scheduling.k8s.io/v1alpha1=true"},
		"manifests/10-kube-proxy.yaml":    {"--ipvs-exclude-cidrs=10.0.0.0/8", "--ipvs-exclude-cidrs=192.168.0.0/16"},
	} {
		flags := flagsOf(t, arts, path)

		i := slices.Index(flags, want[0])
		if i < 0 || i+len(want) > len(flags) || !slices.Equal(flags[i:i+len(want)], want) {
			t.Errorf("%s: no %q in a row in %q", path, want, flags)
		}
	}
}
