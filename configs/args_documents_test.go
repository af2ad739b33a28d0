package configs_test

import (
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// TestArgsInDocuments: the Kubernetes documents' extraArgs take lists as
// v1alpha1's do; what validation says of them names the document, and a
// strategic merge patch replaces one flag's value whole (Talos's
// Args.Merge), keeping the others.
func TestArgsInDocuments(t *testing.T) {
	const kubelet = "kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.34.12\nconfig: {}\n"

	runKubeCases(t, []kubeCase{
		{name: "kubelet lists", doc: kubelet + "extraArgs:\n  node-labels: [a=b, c=d]\n  v: [\"3\"]\n", fold: func(t *testing.T, cfg *configs.Config) {
			a := cfg.Machine.Kubelet.ExtraArgs
			if !slices.Equal(a.Values("node-labels"), []string{"a=b", "c=d"}) || !a["v"].IsList() {
				t.Errorf("kubelet extraArgs %#v", a)
			}
		}},
		{name: "kubelet flag that keeps the last value", doc: kubelet + "extraArgs:\n  register-with-taints: [a:NoSchedule, b:NoSchedule]\n",
			err: `KubeletConfig.extraArgs["register-with-taints"]: --register-with-taints is given 2 times (a list)`},
		{name: "a bad item, at its index", doc: kubelet + "extraArgs:\n  feature-gates: [AllBeta=true, Nope=true]\n",
			err: `KubeletConfig.extraArgs["feature-gates"][1]: kubelet 1.34.12 has no feature gate "Nope"`},
		{name: "not a string or a list", doc: kubelet + "extraArgs:\n  v: {a: b}\n",
			decodeErr: `KubeletConfig.extraArgs["v"]: want a string, or a list of strings for a repeated flag (--flag=a --flag=b), got a mapping`},
		{name: "controller-manager lists over the network's masks", doc: "kind: KubeControllerManagerConfig\nimage: registry.k8s.io/kube-controller-manager:v1.34.12\n" +
			"extraArgs:\n  controllers: [\"*\", \"-ttl\"]\n", fold: func(t *testing.T, cfg *configs.Config) {
			a := cfg.Cluster.ControllerManager.ExtraArgs
			if !slices.Equal(a.Values("controllers"), []string{"*", "-ttl"}) || a.Joined("controllers") != "*,-ttl" {
				t.Errorf("controller-manager extraArgs %#v", a)
			}
		}},
		{name: "API server flag that keeps the last value", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nextraArgs:\n  v: [\"1\", \"2\"]\n",
			err: `KubeAPIServerConfig.extraArgs["v"]: --v is given 2 times (a list), but kube-apiserver 1.34.12 keeps only the last value of a Level flag`},
	})

	const listed = "apiVersion: v1alpha1\nkind: KubeletConfig\nextraArgs:\n  node-labels: [a=b, c=d]\n  v: \"2\"\n"

	runPatchCases(t, []patchCase{
		{name: "a list replaces a list", patch: listed + "---\napiVersion: v1alpha1\nkind: KubeletConfig\nextraArgs:\n  node-labels: [e=f]\n",
			check: func(t *testing.T, cfg *configs.Config) {
				a := cfg.Machine.Kubelet.ExtraArgs
				if !slices.Equal(a.Values("node-labels"), []string{"e=f"}) || a["v"].String() != "2" {
					t.Errorf("extraArgs %#v, want node-labels [e=f] (not appended to) and v kept", a)
				}
			}},
		{name: "a string replaces a list", patch: listed + "---\napiVersion: v1alpha1\nkind: KubeletConfig\nextraArgs:\n  node-labels: e=f\n",
			check: func(t *testing.T, cfg *configs.Config) {
				if v := cfg.Machine.Kubelet.ExtraArgs["node-labels"]; v.IsList() || v.Value != "e=f" {
					t.Errorf("node-labels %#v", v)
				}
			}},
		{name: "a list replaces a string", patch: listed + "---\napiVersion: v1alpha1\nkind: KubeletConfig\nextraArgs:\n  v: [\"4\"]\n",
			check: func(t *testing.T, cfg *configs.Config) {
				a := cfg.Machine.Kubelet.ExtraArgs
				if !slices.Equal(a.Values("v"), []string{"4"}) || !a["v"].IsList() || len(a.Values("node-labels")) != 2 {
					t.Errorf("extraArgs %#v", a)
				}
			}},
		{name: "JSON patch sets a list", patch: `[{"op": "add", "path": "/KubeletConfig/extraArgs", "value": {"node-labels": ["a=b", "c=d"], "v": "2"}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				a := cfg.Machine.Kubelet.ExtraArgs
				if !slices.Equal(a.Values("node-labels"), []string{"a=b", "c=d"}) || !a["node-labels"].IsList() || a["v"].String() != "2" {
					t.Errorf("extraArgs %#v", a)
				}
			}},
	})
}
