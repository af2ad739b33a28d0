package manifests

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/images"
)

const testToken = "abcdef.0123456789abcdef"

func defaults() Options {
	return Options{
		ClusterName: "test", Server: "https://10.5.0.2:6443",
		PodSubnets: []string{"10.244.0.0/16"}, ServiceSubnets: []string{"10.96.0.0/12"},
		DNSDomain: "cluster.local", BootstrapToken: testToken,
		ProxyEnabled: true, CoreDNSEnabled: true, FlannelEnabled: true,
	}
}

func render(t *testing.T, o Options) []Manifest {
	t.Helper()

	ms, err := Render(o)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}

	return ms
}

func ids(ms []Manifest) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.ID)
	}

	return out
}

// object finds kind/name in the manifests, failing the test if absent.
func object(t *testing.T, ms []Manifest, kind, name string) *unstructured.Unstructured {
	t.Helper()

	for _, m := range ms {
		for _, o := range m.Objects {
			if o.GetKind() == kind && o.GetName() == name {
				return o
			}
		}
	}

	t.Fatalf("no %s %q in %v", kind, name, ids(ms))

	return nil
}

func str(t *testing.T, o *unstructured.Unstructured, path ...string) string {
	t.Helper()

	v, ok, err := unstructured.NestedString(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s %s: %v: ok=%v err=%v", o.GetKind(), o.GetName(), path, ok, err)
	}

	return v
}

// container is the first (init) container of a workload's pod template.
func container(t *testing.T, o *unstructured.Unstructured, field string, i int) map[string]any {
	t.Helper()

	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
	if len(cs) <= i {
		t.Fatalf("%s %s has %d %s", o.GetKind(), o.GetName(), len(cs), field)
	}

	return cs[i].(map[string]any)
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}

	return out
}

func TestRenderIDs(t *testing.T) {
	all := []string{
		IDBootstrapToken, IDCSRApproverBinding, IDCSRNodeBootstrap, IDCSRRenewalBinding, IDFlannel,
		IDKubeProxy, IDCoreDNS, IDCoreDNSService, IDKubeconfigInCluster, IDTalosNodeRBAC,
	}

	for _, tc := range []struct {
		name    string
		mutate  func(*Options)
		without []string
	}{
		{"all", func(*Options) {}, nil},
		{"no proxy", func(o *Options) { o.ProxyEnabled = false }, []string{IDKubeProxy}},
		{"no coredns", func(o *Options) { o.CoreDNSEnabled = false }, []string{IDCoreDNS}},
		{"no flannel", func(o *Options) { o.FlannelEnabled = false }, []string{IDFlannel}},
		{"none", func(o *Options) { o.ProxyEnabled, o.CoreDNSEnabled, o.FlannelEnabled = false, false, false },
			[]string{IDKubeProxy, IDCoreDNS, IDFlannel}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			tc.mutate(&o)

			want := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return slices.Contains(tc.without, id) })
			if got := ids(render(t, o)); !reflect.DeepEqual(got, want) {
				t.Errorf("IDs:\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"denied proxy arg", func(o *Options) { o.ProxyExtraArgs = configs.ArgsOf(map[string]string{"kubeconfig": "/x"}) }, "cluster.proxy.extraArgs"},
		{"denied proxy arg with dashes", func(o *Options) { o.ProxyExtraArgs = configs.ArgsOf(map[string]string{"--kubeconfig": "/x"}) }, `"kubeconfig"`},
		{"bad token", func(o *Options) { o.BootstrapToken = "nope" }, "cluster.token"},
		{"no endpoint", func(o *Options) { o.Server = "" }, "cluster endpoint"},
		{"bad domain", func(o *Options) { o.DNSDomain = "a b\n}" }, "dnsDomain"},
		{"bad pod subnet", func(o *Options) { o.PodSubnets = []string{"10.244.0.0"} }, "podSubnets"},
		{"bad dns ip", func(o *Options) { o.DNSServiceIPs = []string{"10.96.0.x"} }, "DNS service IP"},
		{"two v4 dns ips", func(o *Options) { o.DNSServiceIPs = []string{"10.96.0.10", "10.96.0.11"} }, "one per address family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			tc.mutate(&o)

			_, err := Render(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestBootstrapToken(t *testing.T) {
	s := object(t, render(t, defaults()), "Secret", "bootstrap-token-abcdef")

	if s.GetNamespace() != "kube-system" || str(t, s, "type") != "bootstrap.kubernetes.io/token" {
		t.Errorf("secret %s/%s type %s", s.GetNamespace(), s.GetName(), str(t, s, "type"))
	}

	data, _, _ := unstructured.NestedStringMap(s.Object, "stringData")
	want := map[string]string{
		"token-id": "abcdef", "token-secret": "0123456789abcdef",
		"usage-bootstrap-authentication": "true", "auth-extra-groups": "system:bootstrappers:nodes",
	}

	if !reflect.DeepEqual(data, want) {
		t.Errorf("stringData %v, want %v", data, want)
	}
}

func TestDNSService(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(*Options)
		ips      []string
		policy   string
		families []string
	}{
		{"default", func(*Options) {}, []string{"10.96.0.10"}, "SingleStack", []string{"IPv4"}},
		{"explicit", func(o *Options) { o.DNSServiceIPs = []string{"10.96.0.53"} }, []string{"10.96.0.53"}, "SingleStack", []string{"IPv4"}},
		{"other subnet", func(o *Options) { o.ServiceSubnets = []string{"172.20.0.0/16"} }, []string{"172.20.0.10"}, "SingleStack", []string{"IPv4"}},
		{"dual stack", func(o *Options) { o.ServiceSubnets = []string{"10.96.0.0/12", "fd00:10:96::/112"} },
			[]string{"10.96.0.10", "fd00:10:96::a"}, "RequireDualStack", []string{"IPv4", "IPv6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			tc.mutate(&o)

			svc := object(t, render(t, o), "Service", "kube-dns")

			ips, _, _ := unstructured.NestedStringSlice(svc.Object, "spec", "clusterIPs")
			fams, _, _ := unstructured.NestedStringSlice(svc.Object, "spec", "ipFamilies")

			if str(t, svc, "spec", "clusterIP") != tc.ips[0] || !reflect.DeepEqual(ips, tc.ips) ||
				!reflect.DeepEqual(fams, tc.families) || str(t, svc, "spec", "ipFamilyPolicy") != tc.policy {
				t.Errorf("kube-dns spec: %v", svc.Object["spec"])
			}
		})
	}
}

func TestKubeProxy(t *testing.T) {
	o := defaults()
	o.ProxyExtraArgs = configs.ArgsOf(map[string]string{"v": "2", "metrics-bind-address": "0.0.0.0:10249", "proxy-mode": "ipvs", "x": "a\nb: \"c\""})

	ms := render(t, o)
	ds := object(t, ms, "DaemonSet", "kube-proxy")
	c := container(t, ds, "containers", 0)

	want := []string{
		"/usr/local/bin/kube-proxy", "--cluster-cidr=10.244.0.0/16", "--conntrack-max-per-core=0",
		"--hostname-override=$(NODE_NAME)", "--kubeconfig=/etc/kubernetes/kubeconfig",
		"--metrics-bind-address=0.0.0.0:10249", "--proxy-mode=ipvs", "--v=2", "--x=a\nb: \"c\"",
	}
	if got := strs(c["command"]); !reflect.DeepEqual(got, want) {
		t.Errorf("command:\n got %q\nwant %q", got, want)
	}

	if c["image"] != images.Proxy(images.Kubernetes).String() {
		t.Errorf("image %v", c["image"])
	}

	if str(t, ds, "spec", "template", "spec", "priorityClassName") != "system-cluster-critical" {
		t.Error("priorityClassName")
	}

	object(t, ms, "ServiceAccount", "kube-proxy")

	if crb := object(t, ms, "ClusterRoleBinding", "kube-proxy"); str(t, crb, "roleRef", "name") != "system:node-proxier" {
		t.Error("kube-proxy binding")
	}

	for image, mode := range map[string]string{
		"registry.k8s.io/kube-proxy:v1.34.12": "nftables",
		"registry.k8s.io/kube-proxy:v1.30.4":  "iptables",
		"localhost:5000/kube-proxy":           "nftables",
	} {
		o := defaults()
		o.ProxyImage = image

		ds := object(t, render(t, o), "DaemonSet", "kube-proxy")

		c := container(t, ds, "containers", 0)
		if got := strs(c["command"]); got[len(got)-1] != "--proxy-mode="+mode {
			t.Errorf("%s: %q, want mode %s", image, got, mode)
		}

		// A new kube-proxy takes over the old one's rules: nothing empties
		// them first (that left a node unrouted until the first sync).
		if inits, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "initContainers"); len(inits) != 0 {
			t.Errorf("%s: init containers in %s mode: %v", image, mode, inits)
		}
	}
}

// kube-proxy and flannel reach the API server before the service network
// works: through KubePrism when it is on, else the endpoint.
func TestKubeconfigInCluster(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prismPort int
		server    string
		flannel   map[string]string
	}{
		{"endpoint", 0, "https://10.5.0.2:6443", map[string]string{}},
		{"kubeprism", 7445, "https://127.0.0.1:7445",
			map[string]string{"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "7445"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			o.KubePrismPort = tc.prismPort
			ms := render(t, o)

			var kc struct {
				Clusters []struct {
					Cluster map[string]string `json:"cluster"`
				} `json:"clusters"`
				Users []struct {
					User map[string]string `json:"user"`
				} `json:"users"`
				CurrentContext string `json:"current-context"`
			}
			if err := yaml.Unmarshal([]byte(str(t, object(t, ms, "ConfigMap", "kubeconfig-in-cluster"), "data", "kubeconfig")), &kc); err != nil {
				t.Fatal(err)
			}

			if kc.Clusters[0].Cluster["server"] != tc.server ||
				kc.Clusters[0].Cluster["certificate-authority"] != "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" ||
				kc.Users[0].User["tokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" || kc.CurrentContext != "local" {
				t.Errorf("kubeconfig %+v, want server %s", kc, tc.server)
			}

			env := map[string]string{}
			for _, e := range container(t, object(t, ms, "DaemonSet", "kube-flannel"), "containers", 0)["env"].([]any) {
				if e := e.(map[string]any); strings.HasPrefix(e["name"].(string), "KUBERNETES_") {
					env[e["name"].(string)] = e["value"].(string)
				}
			}

			if !maps.Equal(env, tc.flannel) {
				t.Errorf("flannel's KUBERNETES_* env %v, want %v", env, tc.flannel)
			}
		})
	}

	o := defaults()
	o.KubePrismPort = 70000

	if _, err := Render(o); err == nil || !strings.Contains(err.Error(), "70000 is not a port") {
		t.Errorf("a KubePrism port out of range: %v", err)
	}
}

func TestCoreDNS(t *testing.T) {
	o := defaults()
	o.DNSDomain = "example.internal"

	ms := render(t, o)

	corefile := str(t, object(t, ms, "ConfigMap", "coredns"), "data", "Corefile")
	for _, want := range []string{"kubernetes example.internal in-addr.arpa ip6.arpa", "prometheus :9153", "lameduck 5s", "max_concurrent 1000", "disable success example.internal"} {
		if !strings.Contains(corefile, want) {
			t.Errorf("Corefile lacks %q:\n%s", want, corefile)
		}
	}

	d := object(t, ms, "Deployment", "coredns")
	c := container(t, d, "containers", 0)

	if replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); replicas != 2 ||
		c["image"] != images.CoreDNSImage().String() || !reflect.DeepEqual(strs(c["args"]), []string{"-conf", "/etc/coredns/Corefile"}) {
		t.Errorf("deployment: replicas %d, container %v", replicas, c)
	}

	// Readiness is probed every 2 s, and a replica still leaves the
	// endpoints only after 30 s of failures, as with the defaults.
	probe, _ := c["readinessProbe"].(map[string]any)
	if period, fails := probe["periodSeconds"], probe["failureThreshold"]; period != int64(2) || fails != int64(15) {
		t.Errorf("coredns readiness probe %v", probe)
	}

	object(t, ms, "ClusterRole", "system:coredns")
	object(t, ms, "ClusterRoleBinding", "system:coredns")
	object(t, ms, "ServiceAccount", "coredns")
}

func TestFlannel(t *testing.T) {
	o := defaults()
	o.PodSubnets = []string{"10.42.0.0/16", "fd00:10:244::/56"}
	o.FlannelExtraArgs = []string{"--iface=eth1"}

	ms := render(t, o)

	var nc map[string]any
	if err := json.Unmarshal([]byte(str(t, object(t, ms, "ConfigMap", "kube-flannel-cfg"), "data", "net-conf.json")), &nc); err != nil {
		t.Fatal(err)
	}

	if nc["Network"] != "10.42.0.0/16" || nc["IPv6Network"] != "fd00:10:244::/56" || nc["Backend"].(map[string]any)["Type"] != "vxlan" {
		t.Errorf("net-conf.json %v", nc)
	}

	ds := object(t, ms, "DaemonSet", "kube-flannel")
	if ds.GetNamespace() != "kube-system" {
		t.Errorf("namespace %s", ds.GetNamespace())
	}

	c := container(t, ds, "containers", 0)
	if got := strs(c["args"]); !reflect.DeepEqual(got, []string{"--ip-masq", "--kube-subnet-mgr", "--iface=eth1"}) {
		t.Errorf("flanneld args %q", got)
	}

	// The paths the init containers use are the ones our image holds
	// (internal/imagebuild/recipes.go).
	cni := container(t, ds, "initContainers", 0)
	cfg := container(t, ds, "initContainers", 1)

	if got := strs(cni["command"]); got[0] != "/opt/cni/bin/flannel" || got[len(got)-1] != "/host/opt/cni/bin/flannel" {
		t.Errorf("install-cni %q", got)
	}

	if got := strs(cfg["command"]); got[len(got)-1] != "/etc/cni/net.d/10-flannel.conflist" {
		t.Errorf("install-config %q", got)
	}

	if c["image"] != images.FlannelImage().String() || strs(c["command"])[0] != "/opt/bin/flanneld" {
		t.Errorf("flannel container %v", c)
	}
}

func TestInline(t *testing.T) {
	m, err := Inline("stuff", `# leading comment
---
apiVersion: v1
kind: Namespace
metadata:
  name: a
---
---
# only a comment
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c1, namespace: a}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c2, namespace: a}
`)
	if err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, o := range m.Objects {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}

	if m.ID != "99-stuff" || !reflect.DeepEqual(got, []string{"Namespace/a", "ConfigMap/c1", "ConfigMap/c2"}) {
		t.Errorf("%s: %v", m.ID, got)
	}

	// YAML gives back what was parsed.
	y, err := m.YAML()
	if err != nil {
		t.Fatal(err)
	}

	back, err := Parse(m.ID, y)
	if err != nil || !reflect.DeepEqual(back.Objects, m.Objects) {
		t.Errorf("YAML round trip: %v\n%s", err, y)
	}
}

func TestInlineErrors(t *testing.T) {
	for _, tc := range []struct {
		name, contents string
		want           []string
	}{
		{"bad", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkind: [unclosed\n", []string{`"bad"`, "document 2"}},
		{"nokind", "apiVersion: v1\nmetadata: {name: a}\n", []string{`"nokind"`, "document 1", "Kind"}},
		{"noversion", "kind: Namespace\nmetadata: {name: a}\n", []string{"document 1", "no apiVersion"}},
	} {
		_, err := Inline(tc.name, tc.contents)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", tc.name, err, w)
			}
		}
	}

	if _, err := Inline("", "kind: x"); err == nil {
		t.Error("an unnamed inline manifest was accepted")
	}

	if _, err := Parse("99-https://example.com/x.yaml", []byte("a: [")); err == nil || !strings.Contains(err.Error(), "99-https://example.com/x.yaml") {
		t.Errorf("Parse: %v", err)
	}
}

func TestRenderedYAML(t *testing.T) {
	for _, m := range render(t, defaults()) {
		y, err := m.YAML()
		if err != nil {
			t.Fatal(err)
		}

		back, err := Parse(m.ID, y)
		if err != nil || len(back.Objects) != len(m.Objects) {
			t.Errorf("%s: %v", m.ID, err)
		}
	}
}

// The workloads talosbox deploys run their pods in the node's system shim
// group: one runc shim per node for all of them, not one per pod.
func TestSystemShimGroup(t *testing.T) {
	ms := render(t, defaults())

	for _, w := range []struct{ kind, name string }{
		{"DaemonSet", "kube-proxy"},
		{"DaemonSet", "kube-flannel"},
		{"Deployment", "coredns"},
	} {
		o := object(t, ms, w.kind, w.name)

		ann, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "annotations")
		if got := ann[constants.ShimGroupAnnotation]; got != constants.SystemShimGroup {
			t.Errorf("%s %s pod annotations %v, want %s: %s", w.kind, w.name, ann, constants.ShimGroupAnnotation, constants.SystemShimGroup)
		}
	}
}
