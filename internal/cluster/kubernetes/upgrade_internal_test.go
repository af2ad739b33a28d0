package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/pki"
)

func TestCheckUpgradePath(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		wantErr  string
	}{
		{"1.33.13", "1.34.12", ""},
		{"v1.33.0", "v1.34.0", ""},
		{"1.34.12", "1.34.12", ""}, // a re-run: resync only
		{"1.34.12", "1.34.3", ""},  // another patch of the same minor
		{"1.32.1", "1.34.12", "at most one minor version up"},
		{"1.34.12", "1.33.13", "roll back by applying the previous machine config"},
		{"1.34.12", "2.0.0", "unsupported upgrade path"},
		{"1.34", "1.34.1", "--from"},
		{"1.34.1", "latest", "--to"},
	} {
		err := checkUpgradePath(tc.from, tc.to)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s -> %s: %v", tc.from, tc.to, err)
			}

			continue
		}

		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s -> %s: error %v, want one containing %q", tc.from, tc.to, err, tc.wantErr)
		}
	}
}

func TestCheckSupportedVersion(t *testing.T) {
	for _, v := range images.KubernetesVersions() {
		if err := checkSupportedVersion(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}

	err := checkSupportedVersion("1.20.0")
	if err == nil || !strings.Contains(err.Error(), "is not supported") {
		t.Errorf("1.20.0: %v", err)
	}
}

func TestImageTagVersion(t *testing.T) {
	for _, tc := range []struct{ image, version, repo string }{
		{"registry.k8s.io/kube-apiserver:v1.34.12", "1.34.12", "registry.k8s.io/kube-apiserver"},
		{"localhost:5000/kube-apiserver:v1.33.13", "1.33.13", "localhost:5000/kube-apiserver"},
		{"localhost:5000/kube-apiserver", "", "localhost:5000/kube-apiserver"},
		{"ghcr.io/siderolabs/kubelet:latest", "", "ghcr.io/siderolabs/kubelet"},
		{"", "", ""},
	} {
		if got := imageTagVersion(tc.image); got != tc.version {
			t.Errorf("imageTagVersion(%q) = %q, want %q", tc.image, got, tc.version)
		}

		if got := ImageRepository(tc.image); got != tc.repo {
			t.Errorf("ImageRepository(%q) = %q, want %q", tc.image, got, tc.repo)
		}
	}
}

func TestLowestVersion(t *testing.T) {
	got, err := lowestVersion([]string{"1.34.12", "", "1.33.13", "1.34.1"})
	if err != nil || got != "1.33.13" {
		t.Errorf("lowestVersion = %q, %v", got, err)
	}

	if _, err := lowestVersion([]string{"", ""}); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Errorf("no versions: %v", err)
	}
}

// TestNestedPatch applies the patch upgrade-k8s sends to a config that
// lacks the section, and to one that has it, through the same patcher
// `talosctl patch` uses.
func TestNestedPatch(t *testing.T) {
	const want = "registry.k8s.io/kube-proxy:v1.34.12"

	for name, doc := range map[string]string{
		"absent":  "version: v1alpha1\nmachine:\n  type: controlplane\ncluster:\n  clusterName: a\n",
		"present": "version: v1alpha1\nmachine:\n  type: controlplane\ncluster:\n  clusterName: a\n  proxy:\n    image: registry.k8s.io/kube-proxy:v1.33.13\n    disabled: false\n",
	} {
		ps, err := configpatch.Parse([]byte(nestedPatch("cluster.proxy.image", want)))
		if err != nil {
			t.Fatal(err)
		}

		out, err := configpatch.Apply([]byte(doc), ps...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}

		var cfg struct {
			Cluster struct {
				ClusterName string              `yaml:"clusterName"`
				Proxy       configs.ProxyConfig `yaml:"proxy"`
			} `yaml:"cluster"`
		}

		if err := yaml.Unmarshal(out, &cfg); err != nil {
			t.Fatal(err)
		}

		if cfg.Cluster.Proxy.Image != want || cfg.Cluster.ClusterName != "a" {
			t.Errorf("%s: patched config:\n%s", name, out)
		}
	}
}

func TestParseStaticPod(t *testing.T) {
	const pod = `metadata:
  annotations:
    talos.dev/config-version: "7"
spec:
  containers:
  - image: registry.k8s.io/kube-apiserver:v1.34.12
`
	for name, spec := range map[string]string{
		"bare":    "apiVersion: v1\nkind: Pod\n" + pod,
		"wrapped": "pod:\n" + indent(pod),
	} {
		sp, err := parseStaticPod([]byte(spec))
		if err != nil || sp.image != "registry.k8s.io/kube-apiserver:v1.34.12" || sp.configVersion != "7" {
			t.Errorf("%s: %+v, %v", name, sp, err)
		}
	}

	if _, err := parseStaticPod([]byte("metadata: {}\n")); err == nil {
		t.Error("a pod without containers was accepted")
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}

	return strings.Join(lines, "\n") + "\n"
}

// TestOptionsCheckedBeforeTheCluster: a bad version, or convert-k8s's
// key-only step, never reaches the cluster, so it answers the same whether
// the nodes are up or not.
func TestOptionsCheckedBeforeTheCluster(t *testing.T) {
	unreachable := func(t *testing.T) func(context.Context) (*Client, error) {
		return func(context.Context) (*Client, error) {
			t.Error("the cluster was reached")
			return nil, errors.New("unreachable")
		}
	}

	var out bytes.Buffer

	err := Upgrade(t.Context(), &out, nil, unreachable(t), UpgradeOptions{To: "1.x"})
	if err == nil || !strings.HasPrefix(err.Error(), "--to: ") {
		t.Errorf("upgrade --to 1.x: %v", err)
	}

	err = Convert(t.Context(), &out, strings.NewReader(""), nil, unreachable(t), ConvertOptions{RemoveInitializedKey: true})
	if err != nil || !strings.Contains(out.String(), "removing self-hosted initialized key") {
		t.Errorf("convert --remove-initialized-key: %v\n%s", err, out.String())
	}
}

// TestImagePatchChoice: upgrade-k8s sets a component's image where the
// node's config holds it: the component's document in a Talos 1.14
// config (a v1alpha1 field next to it would be a conflict the node
// refuses), the v1alpha1 field otherwise; the patched config is valid
// and runs the new image.
func TestImagePatchChoice(t *testing.T) {
	bundle, err := pki.NewBundle(pki.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// imageIn is a component's image in a config's cluster and machine
	// sections ("" when they have none).
	imageIn := func(c *configs.ClusterConfig, m *configs.MachineConfig, component string) string {
		switch {
		case component == "kubelet" && m != nil && m.Kubelet != nil:
			return m.Kubelet.Image
		case c == nil:
			return ""
		case component == "kube-apiserver" && c.APIServer != nil:
			return c.APIServer.Image
		case component == "kube-controller-manager" && c.ControllerManager != nil:
			return c.ControllerManager.Image
		case component == "kube-scheduler" && c.Scheduler != nil:
			return c.Scheduler.Image
		case component == "kube-proxy" && c.Proxy != nil:
			return c.Proxy.Image
		}

		return ""
	}

	for _, contract := range []generate.Contract{generate.Default, generate.Current} {
		out, err := generate.Generate(generate.Options{ClusterName: "up", Endpoint: "https://10.5.0.2:6443", Secrets: bundle, Contract: contract})
		if err != nil {
			t.Fatal(err)
		}

		for _, cfg := range []*configs.Config{out.ControlPlane, out.Worker} {
			data, err := cfg.Encode()
			if err != nil {
				t.Fatal(err)
			}

			components := []string{"kubelet"}
			if cfg.IsControlPlane() {
				components = append(components, controlPlaneComponents...)
				components = append(components, "kube-proxy")
			}

			for _, component := range components {
				t.Run(contract.String()+"/"+cfg.Machine.Type+"/"+component, func(t *testing.T) {
					want := "registry.example.com/" + component + ":v1.34.13"

					patched, err := withImage(data, component, want)
					if err != nil {
						t.Fatal(err)
					}

					got, _, err := configs.Load(patched, configs.ModeContainer)
					if err != nil {
						t.Fatalf("the patched config is refused: %v", err)
					}

					if img := imageIn(got.Cluster, got.Machine, component); img != want {
						t.Errorf("image %q, want %q", img, want)
					}

					// Where it went: the document, or the v1alpha1 field.
					kind := componentDocuments[component]
					inDoc := slices.ContainsFunc(got.Documents, func(d configs.Document) bool { return d.Kind() == kind })

					if contract.AtLeast(1, 14) != inDoc {
						t.Errorf("contract %s: the config has a %s: %v", contract, kind, inDoc)
					}

					v1 := got.V1Alpha1()
					if written := imageIn(v1.Cluster, v1.Machine, component); inDoc && written != "" || !inDoc && written != want {
						t.Errorf("the v1alpha1 document says %q (a document: %v)", written, inDoc)
					}
				})
			}
		}
	}
}
