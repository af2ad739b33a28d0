package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeExternalManifestConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		// Read from the documents, each with its own headers, after
		// cluster.extraManifests.
		{name: "with its headers", doc: "kind: KubeExternalManifestConfig\nname: cilium\nurl: https://example.com/cilium.yaml\nheaders:\n  Authorization: Bearer x\n",
			v1: "cluster:\n  extraManifests: [https://example.com/a.yaml]\n  extraManifestHeaders:\n    X-A: a\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				got := configs.ExternalManifests(cfg)
				if len(got) != 2 || got[0].ID != "99-https://example.com/a.yaml" || got[0].Headers["X-A"] != "a" ||
					got[1].ID != "99-cilium" || got[1].URL != "https://example.com/cilium.yaml" || got[1].Headers["Authorization"] != "Bearer x" || got[1].Headers["X-A"] != "" {
					t.Errorf("manifests %+v", got)
				}
			}},
		{name: "on a worker", worker: true, doc: "kind: KubeExternalManifestConfig\nname: a\nurl: https://example.com/a.yaml\n"},
		{name: "unknown field", doc: "kind: KubeExternalManifestConfig\nname: a\nurls: []\n", decodeErr: `unknown field "urls" in KubeExternalManifestConfig["a"] (did you mean "url"?)`},
		{name: "wrong type", doc: "kind: KubeExternalManifestConfig\nname: a\nurl: https://x\nheaders: [a]\n", decodeErr: `KubeExternalManifestConfig["a"].headers: expected a mapping`},
		{name: "bad name", doc: "kind: KubeExternalManifestConfig\nname: Custom_CNI\nurl: https://example.com/a.yaml\n",
			err: `KubeExternalManifestConfig["Custom_CNI"].name: manifest name "Custom_CNI" is invalid: a lowercase RFC 1123 subdomain`},
		{name: "no URL", doc: "kind: KubeExternalManifestConfig\nname: a\n", err: `KubeExternalManifestConfig["a"].url: manifest URL is required`},
		{name: "ftp", doc: "kind: KubeExternalManifestConfig\nname: a\nurl: ftp://example.com/a.yaml\n", err: `KubeExternalManifestConfig["a"].url: invalid manifest URL "ftp://example.com/a.yaml": scheme must be http or https`},
		{name: "bad header", doc: "kind: KubeExternalManifestConfig\nname: a\nurl: https://example.com/a.yaml\nheaders:\n  \"X A\": b\n", err: `KubeExternalManifestConfig["a"].headers["X A"]: invalid HTTP header name`},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge adds one", patch: "apiVersion: v1alpha1\nkind: KubeExternalManifestConfig\nname: cni\nurl: https://example.com/cni.yaml\n", check: func(t *testing.T, cfg *configs.Config) {
			if got := configs.ExternalManifests(cfg); len(got) != 1 || got[0].ID != "99-cni" {
				t.Errorf("%+v", got)
			}
		}},
		{name: "JSON patch adds one", patch: `[{"op": "add", "path": "/KubeExternalManifestConfig", "value": {"cni": {"url": "https://example.com/cni.yaml"}}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if got := configs.ExternalManifests(cfg); len(got) != 1 || got[0].URL != "https://example.com/cni.yaml" {
					t.Errorf("%+v", got)
				}
			}},
	})
}

func TestKubeInlineManifestConfig(t *testing.T) {
	const ns = "kind: KubeInlineManifestConfig\nname: namespace-ci\nmanifest: |\n  apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ci\n"

	runKubeCases(t, []kubeCase{
		{name: "after the v1alpha1 document's", doc: ns, v1: "cluster:\n  inlineManifests:\n    - name: first\n      contents: |\n        apiVersion: v1\n        kind: Namespace\n        metadata:\n          name: first\n",
			fold: func(t *testing.T, cfg *configs.Config) {
				im := cfg.Cluster.InlineManifests
				if len(im) != 2 || im[0].Name != "first" || im[1].Name != "namespace-ci" {
					t.Errorf("inline manifests %+v", im)
				}
			}},
		{name: "on a worker", worker: true, doc: ns},
		{name: "unknown field", doc: "kind: KubeInlineManifestConfig\nname: a\ncontents: x\n", decodeErr: `unknown field "contents" in KubeInlineManifestConfig["a"]`},
		{name: "wrong type", doc: "kind: KubeInlineManifestConfig\nname: a\nmanifest: [x]\n", decodeErr: `KubeInlineManifestConfig["a"].manifest: expected a single value`},
		{name: "bad name", doc: "kind: KubeInlineManifestConfig\nname: CI\nmanifest: x\n", err: `KubeInlineManifestConfig["CI"].name: manifest name "CI" is invalid`},
		// A name the v1alpha1 document uses too is a duplicate there.
		{name: "duplicate name", doc: ns, v1: "cluster:\n  inlineManifests:\n    - name: namespace-ci\n      contents: |\n        apiVersion: v1\n        kind: Namespace\n        metadata:\n          name: x\n",
			err: `KubeInlineManifestConfig["namespace-ci"].name: inline manifest name "namespace-ci" is duplicate`},
		{name: "not a manifest", doc: "kind: KubeInlineManifestConfig\nname: a\nmanifest: \"::\"\n", err: `KubeInlineManifestConfig["a"].manifest:`},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\n" + ns, check: func(t *testing.T, cfg *configs.Config) {
			if len(cfg.Cluster.InlineManifests) != 1 {
				t.Errorf("%+v", cfg.Cluster.InlineManifests)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeInlineManifestConfig", "value": {"a": {"manifest": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n"}}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if len(cfg.Cluster.InlineManifests) != 1 || cfg.Cluster.InlineManifests[0].Name != "a" {
					t.Errorf("%+v", cfg.Cluster.InlineManifests)
				}
			}},
	})
}

func TestKubeStaticPodConfig(t *testing.T) {
	const pod = "kind: KubeStaticPodConfig\nname: nginx\npod:\n  apiVersion: v1\n  kind: Pod\n  metadata:\n    name: nginx\n  spec:\n    containers:\n      - name: nginx\n        image: nginx\n"

	runKubeCases(t, []kubeCase{
		{name: "folds into machine.pods", doc: pod, fold: func(t *testing.T, cfg *configs.Config) {
			if p := cfg.Machine.Pods; len(p) != 1 || p[0]["kind"] != "Pod" {
				t.Errorf("pods %+v", p)
			}
		}},
		{name: "on a worker", worker: true, doc: pod},
		{name: "unknown field", doc: "kind: KubeStaticPodConfig\nname: a\nspec: {}\n", decodeErr: `unknown field "spec" in KubeStaticPodConfig["a"]`},
		{name: "wrong type", doc: "kind: KubeStaticPodConfig\nname: a\npod: []\n", decodeErr: `KubeStaticPodConfig["a"].pod: expected a mapping`},
		{name: "no pod", doc: "kind: KubeStaticPodConfig\nname: a\n", err: `KubeStaticPodConfig["a"].pod: static pod spec is required`},
		{name: "bad name", doc: "kind: KubeStaticPodConfig\nname: Nginx\npod:\n  kind: Pod\n", err: `KubeStaticPodConfig["Nginx"].name: static pod name "Nginx" is invalid`},
		// The pod is checked as machine.pods are.
		{name: "not a pod", doc: "kind: KubeStaticPodConfig\nname: a\npod:\n  apiVersion: v1\n  kind: Service\n  metadata:\n    name: a\n", err: `KubeStaticPodConfig["a"].pod`},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge replaces the pod", patch: "apiVersion: v1alpha1\n" + pod, check: func(t *testing.T, cfg *configs.Config) {
			if len(cfg.Machine.Pods) != 1 {
				t.Errorf("%+v", cfg.Machine.Pods)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeStaticPodConfig", "value": {"web": {"pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if len(cfg.Machine.Pods) != 1 {
					t.Errorf("%+v", cfg.Machine.Pods)
				}
			}},
	})
}

func TestKubePrismConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into features.kubePrism", doc: "kind: KubePrismConfig\nport: 7446\n", fold: func(t *testing.T, cfg *configs.Config) {
			if kp := cfg.Machine.Features.KubePrism; kp == nil || !*kp.Enabled || kp.Port != 7446 {
				t.Errorf("%+v", kp)
			}
		}},
		// Without it there is no KubePrism.
		{name: "no document", drop: []string{"KubePrismConfig"}, fold: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Features != nil && cfg.Machine.Features.KubePrism != nil {
				t.Error("KubePrism without its document")
			}
		}},
		{name: "on a worker", worker: true, doc: "kind: KubePrismConfig\nport: 7445\n"},
		{name: "unknown field", doc: "kind: KubePrismConfig\nport: 7445\nenabled: true\n", decodeErr: `unknown field "enabled" in KubePrismConfig`},
		{name: "wrong type", doc: "kind: KubePrismConfig\nport: high\n", decodeErr: "KubePrismConfig.port:"},
		{name: "bad port", doc: "kind: KubePrismConfig\nport: 0\n", err: "KubePrismConfig.port: invalid port 0: must be in range 1-65535"},
		{name: "a port taken", doc: "kind: KubePrismConfig\nport: 50000\n", err: "KubePrismConfig.port:"},
		{name: "tlsServerName", doc: "kind: KubePrismConfig\nport: 7445\ntlsServerName: api.example.com\n", err: "KubePrismConfig.tlsServerName: talosbox cannot honour tlsServerName"},
		{name: "conflict", v1: "machine:\n  features:\n    kubePrism:\n      enabled: true\n      port: 7445\n",
			err: "KubePrismConfig: KubePrism is already set in the v1alpha1 document (machine.features.kubePrism)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubePrismConfig\nport: 7447\n", check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Features.KubePrism.Port != 7447 {
				t.Errorf("%+v", cfg.Machine.Features.KubePrism)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "remove", "path": "/KubePrismConfig"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Features.KubePrism != nil {
				t.Error("KubePrism left")
			}
		}},
	})
}

func TestKubeTalosAPIAccessConfig(t *testing.T) {
	const doc = "kind: KubeTalosAPIAccessConfig\nallowedRoles: [os:reader]\nallowedKubernetesNamespaces: [kube-system]\n"

	runKubeCases(t, []kubeCase{
		{name: "folds into features.kubernetesTalosAPIAccess", doc: doc, fold: func(t *testing.T, cfg *configs.Config) {
			a := cfg.Machine.Features.KubernetesTalosAPIAccess
			if a == nil || !*a.Enabled || a.AllowedRoles[0] != "os:reader" || a.AllowedKubernetesNamespaces[0] != "kube-system" {
				t.Errorf("%+v", a)
			}
		}},
		{name: "unknown field", doc: "kind: KubeTalosAPIAccessConfig\nroles: []\n", decodeErr: `unknown field "roles" in KubeTalosAPIAccessConfig`},
		{name: "wrong type", doc: "kind: KubeTalosAPIAccessConfig\nallowedRoles: os:reader\n", decodeErr: "KubeTalosAPIAccessConfig.allowedRoles: expected a sequence"},
		{name: "bad role", doc: "kind: KubeTalosAPIAccessConfig\nallowedRoles: [os:root]\n", err: `KubeTalosAPIAccessConfig.allowedRoles[0]: invalid role "os:root"`},
		{name: "bad namespace", doc: "kind: KubeTalosAPIAccessConfig\nallowedKubernetesNamespaces: [Kube_System]\n", err: `KubeTalosAPIAccessConfig.allowedKubernetesNamespaces[0]: invalid namespace "Kube_System"`},
		{name: "only on control planes", worker: true, doc: doc, err: "document kind KubeTalosAPIAccessConfig is only allowed on control plane machines"},
		{name: "conflict", v1: "machine:\n  features:\n    kubernetesTalosAPIAccess:\n      enabled: false\n", doc: doc,
			err: "KubeTalosAPIAccessConfig: Talos API access from Kubernetes is already set in the v1alpha1 document (machine.features.kubernetesTalosAPIAccess)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge adds it", patch: "apiVersion: v1alpha1\n" + doc, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Features.KubernetesTalosAPIAccess == nil {
				t.Error("not added")
			}
		}},
		{name: "JSON patch adds it", patch: `[{"op": "add", "path": "/KubeTalosAPIAccessConfig", "value": {"allowedRoles": ["os:reader"]}}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if a := cfg.Machine.Features.KubernetesTalosAPIAccess; a == nil || a.AllowedRoles[0] != "os:reader" {
					t.Errorf("%+v", a)
				}
			}},
	})
}
