package configs_test

import (
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKubeAPIServerConfig(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "folds into cluster.apiServer and the port", doc: `kind: KubeAPIServerConfig
image: registry.k8s.io/kube-apiserver:v1.34.12
extraArgs:
  http2-max-streams-per-connection: "32"
env:
  HTTP_PROXY: http://proxy:3128
resources:
  requests:
    cpu: 500m
apiPort: 5443
certExtraSANs: [api.example.com]
startupProbes: false
`, fold: func(t *testing.T, cfg *configs.Config) {
			a := cfg.Cluster.APIServer
			switch {
			case a.Image != "registry.k8s.io/kube-apiserver:v1.34.12" || a.ExtraArgs["http2-max-streams-per-connection"].String() != "32" || a.Env["HTTP_PROXY"] == "":
				t.Errorf("apiServer %+v", a)
			case a.Resources == nil || a.Resources.Requests["cpu"] != "500m" || !slices.Equal(a.CertSANs, []string{"api.example.com"}):
				t.Errorf("resources %+v SANs %v", a.Resources, a.CertSANs)
			case cfg.LocalAPIServerPort() != 5443:
				t.Errorf("port %d", cfg.LocalAPIServerPort())
			case configs.DocumentOf[*configs.KubeAPIServerConfig](cfg).StartupProbesEnabled():
				t.Error("startupProbes: false")
			}
		}},
		// Talos's default: probes, which need the authentication config
		// to let anonymous requests reach /livez and /readyz.
		{name: "probes by default", fold: func(t *testing.T, cfg *configs.Config) {
			if !configs.DocumentOf[*configs.KubeAPIServerConfig](cfg).StartupProbesEnabled() || !configs.AnonymousHealthChecks(cfg) {
				t.Error("no probes by default")
			}
		}},
		{name: "probes without anonymous health checks", drop: []string{"KubeAuthenticationConfig"},
			warn: "KubeAPIServerConfig.startupProbes: the API server's probes are anonymous requests to /livez and /readyz"},
		{name: "unknown field", doc: "kind: KubeAPIServerConfig\nimage: x\ncertSANs: []\n", decodeErr: `unknown field "certSANs" in KubeAPIServerConfig`},
		{name: "wrong type", doc: "kind: KubeAPIServerConfig\nimage: x\napiPort: high\n", decodeErr: "KubeAPIServerConfig.apiPort:"},
		{name: "no image", doc: "kind: KubeAPIServerConfig\n", err: "KubeAPIServerConfig.image: kube-apiserver image cannot be empty"},
		{name: "bad image", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.20.5\n", err: "KubeAPIServerConfig.image: version of Kubernetes 1.20.5 is too old"},
		{name: "authentication flag", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nextraArgs:\n  oidc-issuer-url: https://idp\n",
			err: `KubeAPIServerConfig.extraArgs["oidc-issuer-url"]: kube-apiserver extra argument "oidc-issuer-url" is not allowed: use KubeAuthenticationConfig`},
		{name: "authorization flag", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nextraArgs:\n  authorization-mode: RBAC\n",
			err: `kube-apiserver extra argument "authorization-mode" is not allowed: use KubeAuthorizerConfig`},
		{name: "flag talosbox sets", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nextraArgs:\n  etcd-servers: https://x\n",
			err: `KubeAPIServerConfig.extraArgs["etcd-servers"]:`},
		{name: "bad resource", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nresources:\n  requests:\n    gpu: 1\n",
			err: `KubeAPIServerConfig.resources.requests["gpu"]: unsupported pod resource "gpu"`},
		{name: "bad port", doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\napiPort: 70000\n", err: "KubeAPIServerConfig.apiPort:"},
		{name: "only on control planes", worker: true, doc: "kind: KubeAPIServerConfig\nimage: registry.k8s.io/kube-apiserver:v1.34.12\nstartupProbes: false\n",
			err: "KubeAPIServerConfig: document kind KubeAPIServerConfig is only allowed on control plane machines"},
		{name: "conflict with cluster.apiServer", v1: "cluster:\n  apiServer:\n    image: registry.k8s.io/kube-apiserver:v1.34.12\n",
			drop: []string{"KubeAdmissionControlConfig", "KubeAuditPolicyConfig"},
			err:  "KubeAPIServerConfig: the kube-apiserver config is already set in the v1alpha1 document (cluster.apiServer)"},
		{name: "conflict with the port", v1: "cluster:\n  controlPlane:\n    localAPIServerPort: 7443\n",
			err: "KubeAPIServerConfig.apiPort: the kube-apiserver API port is already set in the v1alpha1 document (cluster.controlPlane.localAPIServerPort)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge", patch: "apiVersion: v1alpha1\nkind: KubeAPIServerConfig\nextraArgs:\n  v: \"2\"\n", check: func(t *testing.T, cfg *configs.Config) {
			if a := cfg.Cluster.APIServer; a.ExtraArgs["v"].String() != "2" || a.Image != "registry.k8s.io/kube-apiserver:v1.34.12" {
				t.Errorf("apiServer %+v", a)
			}
		}},
		{name: "JSON patch", patch: `[{"op": "replace", "path": "/KubeAPIServerConfig/image", "value": "registry.k8s.io/kube-apiserver:v1.34.1"}]`, check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.APIServer.Image != "registry.k8s.io/kube-apiserver:v1.34.1" {
				t.Errorf("image %q", cfg.Cluster.APIServer.Image)
			}
		}},
	})
}
