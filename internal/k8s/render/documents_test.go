package render_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/k8s/manifests/templates"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// talos114 is gen config's v1.14 control-plane (or worker) config, with
// patches (to its documents) applied.
func talos114(t *testing.T, worker bool, patches ...string) *configs.Config {
	t.Helper()

	out, err := generate.Generate(generate.Options{ClusterName: "docs", Endpoint: "https://10.5.0.2:6443", Contract: generate.Contract{Major: 1, Minor: 14}})
	if err != nil {
		t.Fatal(err)
	}

	cfg := out.ControlPlane
	if worker {
		cfg = out.Worker
	}

	data, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range patches {
		ps, err := configpatch.Parse([]byte(p))
		if err != nil {
			t.Fatal(err)
		}

		if data, err = configpatch.Apply(data, ps...); err != nil {
			t.Fatal(err)
		}
	}

	cfg, _, err = configs.Load(data, configs.ModeContainer)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}

	return cfg
}

func apiServerPod(t *testing.T, cfg *configs.Config) (args []string, container map[string]any) {
	t.Helper()

	specs, err := render.ComponentConfigs(cfg)
	if err != nil {
		t.Fatal(err)
	}

	pod, err := render.StaticPodFor(k8s.APIServerID, specs[k8s.APIServerID], render.PodVersions{Secrets: "s", Config: "c", ConfigFile: "f"})
	if err != nil {
		t.Fatal(err)
	}

	container = pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	for _, a := range container["command"].([]any) {
		args = append(args, a.(string))
	}

	return args, container
}

// TestAPIServerFromDocuments: the API server of a Talos 1.14 config is
// Talos 1.14's: the structured authentication config instead of
// --anonymous-auth=false, the service account issuers and audiences of
// the KubeServiceAccountConfig, the probes; without the documents, the
// v1alpha1 API server is as it was.
func TestAPIServerFromDocuments(t *testing.T) {
	args, c := apiServerPod(t, talos114(t, false))

	for _, want := range []string{
		"--authentication-config=/system/config/kubernetes/kube-apiserver/authentication-config.yaml",
		"--service-account-issuer=https://10.5.0.2:6443",
		"--api-audiences=https://10.5.0.2:6443",
		"--authorization-config=/system/config/kubernetes/kube-apiserver/authorization-config.yaml",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("no %s in %q", want, args)
		}
	}

	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--anonymous-auth") }) {
		t.Error("--anonymous-auth with the authentication config: kube-apiserver refuses both")
	}

	for _, probe := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
		if _, ok := c[probe]; !ok {
			t.Errorf("no %s: Talos 1.14's API server has one", probe)
		}
	}

	if p, _ := c["readinessProbe"].(map[string]any)["httpGet"].(map[string]any); p["path"] != "/readyz" || p["port"] != 6443 {
		t.Errorf("readiness probe %v", p)
	}

	// Accepted issuers follow the issuer, repeated; audiences are the
	// document's.
	args, c = apiServerPod(t, talos114(t, false,
		"apiVersion: v1alpha1\nkind: KubeServiceAccountConfig\naccepted:\n  issuers: [https://old-a:6443, https://old-b:6443]\n  audiences: [vault, https://10.5.0.2:6443]\n",
		"apiVersion: v1alpha1\nkind: KubeAPIServerConfig\nstartupProbes: false\n"))

	i := slices.Index(args, "--service-account-issuer=https://10.5.0.2:6443")
	if i < 0 || i+2 >= len(args) || args[i+1] != "--service-account-issuer=https://old-a:6443" || args[i+2] != "--service-account-issuer=https://old-b:6443" {
		t.Errorf("issuers %q", args)
	}

	if !slices.Contains(args, "--api-audiences=vault,https://10.5.0.2:6443") {
		t.Errorf("audiences %q", args)
	}

	if _, ok := c["startupProbe"]; ok {
		t.Error("startupProbes: false")
	}

	// The v1alpha1 API server: unchanged.
	out, err := generate.Generate(generate.Options{ClusterName: "docs", Endpoint: "https://10.5.0.2:6443"})
	if err != nil {
		t.Fatal(err)
	}

	args, c = apiServerPod(t, out.ControlPlane)
	if !slices.Contains(args, "--anonymous-auth=false") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--authentication-config") }) {
		t.Errorf("v1alpha1 API server args %q", args)
	}

	if _, ok := c["startupProbe"]; ok {
		t.Error("the v1alpha1 API server has no probes (Talos's legacy path)")
	}
}

func configFile(t *testing.T, cfg *configs.Config, name string) map[string]any {
	t.Helper()

	files, err := render.ConfigFiles(cfg)
	if err != nil {
		t.Fatal(err)
	}

	for _, f := range files {
		if strings.HasSuffix(f.Path, "/"+name) {
			var out map[string]any
			if err := yaml.Unmarshal(f.Data, &out); err != nil {
				t.Fatal(err)
			}

			return out
		}
	}

	return nil
}

// TestConfigFilesFromDocuments: the authentication config is the
// KubeAuthenticationConfig's; the authorizers the KubeAuthorizerConfig
// documents, in order.
func TestConfigFilesFromDocuments(t *testing.T) {
	cfg := talos114(t, false,
		"apiVersion: v1alpha1\nkind: KubeAuthorizerConfig\nname: hook\ntype: Webhook\nwebhook:\n  timeout: 3s\n  failurePolicy: NoOpinion\n  subjectAccessReviewVersion: v1\n  matchConditionSubjectAccessReviewVersion: v1\n  connectionInfo:\n    type: InClusterConfig\n",
		`[{"op": "remove", "path": "/KubeAuthorizerConfig/node"}]`)

	authn := configFile(t, cfg, "authentication-config.yaml")
	if authn["kind"] != "AuthenticationConfiguration" || authn["apiVersion"] != "apiserver.config.k8s.io/v1beta1" || authn["anonymous"].(map[string]any)["enabled"] != true {
		t.Errorf("authentication config %v", authn)
	}

	authz := configFile(t, cfg, "authorization-config.yaml")["authorizers"].([]any)
	if len(authz) != 2 || authz[0].(map[string]any)["type"] != "RBAC" || authz[1].(map[string]any)["name"] != "hook" ||
		authz[1].(map[string]any)["webhook"].(map[string]any)["failurePolicy"] != "NoOpinion" {
		t.Errorf("authorizers %v", authz)
	}

	// Without KubeAuthenticationConfig: no file, --anonymous-auth=false.
	cfg = talos114(t, false, `[{"op": "remove", "path": "/KubeAuthenticationConfig"}, {"op": "add", "path": "/KubeAPIServerConfig/startupProbes", "value": false}]`)
	if configFile(t, cfg, "authentication-config.yaml") != nil {
		t.Error("an authentication config without the document")
	}

	if args, _ := apiServerPod(t, cfg); !slices.Contains(args, "--anonymous-auth=false") {
		t.Errorf("args %q", args)
	}
}

// TestControllerManagerNodeMasks: KubeNetworkConfig's node masks are the
// controller-manager's flags, for the families the pods have.
func TestControllerManagerNodeMasks(t *testing.T) {
	cfg := talos114(t, false, "apiVersion: v1alpha1\nkind: KubeNetworkConfig\nnodeCIDRMaskSizeIPv4: 25\nnodeCIDRMaskSizeIPv6: 80\n")

	specs, err := render.ComponentConfigs(cfg)
	if err != nil {
		t.Fatal(err)
	}

	pod, err := render.StaticPodFor(k8s.ControllerManagerID, specs[k8s.ControllerManagerID], render.PodVersions{})
	if err != nil {
		t.Fatal(err)
	}

	cmd, _ := json.Marshal(pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["command"]) //nolint:errchkjson // strings

	if !strings.Contains(string(cmd), `"--node-cidr-mask-size-ipv4=25"`) || strings.Contains(string(cmd), "ipv6") {
		t.Errorf("controller-manager %s", cmd)
	}
}

func rendered(t *testing.T, o templates.Options, id string) string {
	t.Helper()

	texts, err := templates.Render(o)
	if err != nil {
		t.Fatal(err)
	}

	for _, x := range texts {
		if x.ID == id {
			return string(x.YAML)
		}
	}

	return ""
}

// TestManifestsFromDocuments: kube-proxy runs from the KubeProxyConfig's
// configuration file, defaults filled in; flannel has the
// KubeFlannelCNIConfig's backend and resources; without a
// KubeFlannelCNIConfig there is no flannel.
func TestManifestsFromDocuments(t *testing.T) {
	cfg := talos114(t, false,
		"apiVersion: v1alpha1\nkind: KubeProxyConfig\nconfig:\n  metricsBindAddress: 0.0.0.0:10249\nresources:\n  requests:\n    cpu: 100m\n",
		"apiVersion: v1alpha1\nkind: KubeFlannelCNIConfig\nbackendType: host-gw\nbackendPort: 0\nbackendMTU: 1400\nbackendExtraConfig:\n  DirectRouting: true\nresources:\n  limits:\n    memory: 200Mi\n")

	o, err := render.ManifestOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}

	proxy := rendered(t, o, templates.IDKubeProxy)

	for _, want := range []string{`- "--config=/var/lib/kube-proxy/config.conf"`, `- "--hostname-override=$(NODE_NAME)"`, "name: kube-proxy-config",
		"talos.dev/kube-proxy-config-checksum:", `resources: {"requests":{"cpu":"100m"}}`} {
		if !strings.Contains(proxy, want) {
			t.Errorf("kube-proxy lacks %s:\n%s", want, proxy)
		}
	}

	var conf map[string]any

	for _, doc := range strings.Split(proxy, "\n---\n") {
		var m struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}

		if yaml.Unmarshal([]byte(doc), &m) == nil && m.Kind == "ConfigMap" {
			if err := json.Unmarshal([]byte(m.Data["config.conf"]), &conf); err != nil {
				t.Fatal(err)
			}
		}
	}

	if conf["metricsBindAddress"] != "0.0.0.0:10249" || conf["clusterCIDR"] != "10.244.0.0/16" || conf["mode"] != "nftables" ||
		conf["clientConnection"].(map[string]any)["kubeconfig"] != "/etc/kubernetes/kubeconfig" || conf["kind"] != "KubeProxyConfiguration" {
		t.Errorf("kube-proxy configuration %v", conf)
	}

	flannel := rendered(t, o, templates.IDFlannel)
	for _, want := range []string{`\"Type\": \"host-gw\"`, `\"MTU\": 1400`, `\"DirectRouting\": true`, `"limits":{"memory":"200Mi"}`, `"cpu":"100m"`} {
		if !strings.Contains(flannel, want) {
			t.Errorf("flannel lacks %s:\n%s", want, flannel)
		}
	}

	// config: {} is kube-proxy's flags; no KubeFlannelCNIConfig, no flannel.
	cfg = talos114(t, false, `[{"op": "remove", "path": "/KubeFlannelCNIConfig"}]`)

	if o, err = render.ManifestOptions(cfg); err != nil {
		t.Fatal(err)
	}

	if o.FlannelEnabled || rendered(t, o, templates.IDFlannel) != "" {
		t.Error("flannel without its document")
	}

	if proxy := rendered(t, o, templates.IDKubeProxy); !strings.Contains(proxy, `"--proxy-mode=nftables"`) || strings.Contains(proxy, "kube-proxy-config") {
		t.Errorf("kube-proxy with config: {}:\n%s", proxy)
	}
}

// TestKubeletFromDocuments: Talos 1.14's kubelet (KubeletConfig): no
// manifests directory, the seccomp default; a control plane registers
// with the taint its KubeNodeConfig lists, and without it with none.
func TestKubeletFromDocuments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     *configs.Config
		tainted bool
	}{
		{"control plane", talos114(t, false), true},
		{"control plane without the taint", talos114(t, false, `[{"op": "remove", "path": "/KubeNodeConfig/taints"}]`), false},
		{"worker", talos114(t, true), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := render.KubeletSpecFor(tc.cfg, render.KubeletInputs{Nodename: "n", NodeIPs: []string{"10.5.0.2"}})
			if err != nil {
				t.Fatal(err)
			}

			c := spec.Config
			if _, ok := c["staticPodPath"]; ok || c["seccompDefault"] != true {
				t.Errorf("kubelet configuration %v", c)
			}

			if _, tainted := c["registerWithTaints"]; tainted != tc.tainted {
				t.Errorf("registerWithTaints %v, want tainted %v", c["registerWithTaints"], tc.tainted)
			}
		})
	}
}
