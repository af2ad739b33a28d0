package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/images"
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
