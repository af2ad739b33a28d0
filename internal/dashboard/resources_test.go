package dashboard

import (
	"net/netip"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// encoded is a resource as the node's API sends it: the spec marshalled
// the way apid marshals it.
func encoded(t *testing.T, id string, spec any) *resource.Resource {
	t.Helper()

	data, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}

	return &resource.Resource{Metadata: &resource.ResourceMetadata{Id: id}, SpecYaml: data}
}

func TestDecodeAll(t *testing.T) {
	route := network.RouteStatusSpec{
		Family: "inet4", Gateway: netip.MustParseAddr("10.5.0.1"), OutLinkName: "eth0",
		Table: network.TableMain, Type: network.RouteTypeUnicast, Protocol: network.ProtoDHCP, Priority: 1024,
	}

	res := []*resource.Resource{
		encoded(t, "inet4/10.5.0.1//1024", route),
		{Metadata: &resource.ResourceMetadata{Id: "secret"}, Redacted: true, SpecYaml: []byte("dst: '***'")},
	}

	items, err := decodeAll[network.RouteStatusSpec](res)
	if err != nil {
		t.Fatal(err)
	}

	// The redacted resource is left out, not shown masked.
	if len(items) != 1 || items[0].ID != "inet4/10.5.0.1//1024" {
		t.Fatalf("items = %+v", items)
	}

	if got := items[0].Spec; got.Gateway != route.Gateway || got.Table != network.TableMain || got.Priority != 1024 || got.OutLinkName != "eth0" {
		t.Errorf("decoded %+v, want %+v", got, route)
	}

	var ms runtime.MachineStatusSpec
	ms.Stage = "booting"
	ms.Status.UnmetConditions = []runtime.UnmetCondition{{Name: "services", Reason: "etcd"}}

	statuses, err := decodeAll[runtime.MachineStatusSpec]([]*resource.Resource{encoded(t, "machine", ms)})
	if err != nil {
		t.Fatal(err)
	}

	if s := byID(statuses, "machine"); s == nil || s.Stage != "booting" || s.Status.UnmetConditions[0].Name != "services" {
		t.Errorf("machine status = %+v", s)
	}

	if byID(statuses, "other") != nil {
		t.Error("byID found a resource that is not there")
	}

	if _, err := decodeAll[network.RouteStatusSpec]([]*resource.Resource{{Metadata: &resource.ResourceMetadata{Id: "x"}, SpecYaml: []byte("gateway: nope")}}); err == nil {
		t.Error("a bad spec decoded")
	}
}

func TestGateways(t *testing.T) {
	r := &Resources{Routes: []network.RouteStatusSpec{
		{Gateway: netip.MustParseAddr("fd00::1"), Destination: netip.MustParsePrefix("::/0")},
		{Gateway: netip.MustParseAddr("10.5.0.1")},                                                  // default, no prefix given
		{Gateway: netip.MustParseAddr("10.5.0.1"), Destination: netip.MustParsePrefix("0.0.0.0/0")}, // the same, twice
		{Gateway: netip.MustParseAddr("10.6.0.1"), Destination: netip.MustParsePrefix("10.9.0.0/16")},
		{Destination: netip.MustParsePrefix("0.0.0.0/0")}, // no gateway
	}}

	got := r.Gateways()
	if len(got) != 2 || got[0] != "10.5.0.1" || got[1] != "fd00::1" {
		t.Errorf("Gateways = %q", got)
	}
}

func TestKubernetesVersion(t *testing.T) {
	for _, tc := range []struct{ image, want string }{
		{"", ""},
		{"ghcr.io/siderolabs/kubelet:v1.34.1", "v1.34.1"},
		{"registry.local:5000/kubelet:v1.33.0@sha256:abcd", "v1.33.0"},
		{"registry.local:5000/kubelet", ""},
		{"kubelet@sha256:abcd", ""},
	} {
		r := &Resources{KubeletImage: tc.image}
		if got := r.KubernetesVersion(); got != tc.want {
			t.Errorf("KubernetesVersion(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

func TestStaticPodReady(t *testing.T) {
	var pods map[string]map[string]any

	if err := yaml.Unmarshal([]byte(`
kube-system/kube-apiserver-node-a:
  phase: Running
  conditions:
    - type: Initialized
      status: "True"
    - type: Ready
      status: "True"
kube-system/kube-scheduler-node-a:
  conditions:
    - type: Ready
      status: "False"
kube-system/kube-controller-manager-node-a:
  phase: Pending
`), &pods); err != nil {
		t.Fatal(err)
	}

	r := &Resources{StaticPods: pods}

	for name, want := range map[string]string{
		"kube-apiserver": "True", "kube-scheduler": "False", "kube-controller-manager": "", "etcd": "",
	} {
		if got := r.StaticPodReady(name); got != want {
			t.Errorf("StaticPodReady(%s) = %q, want %q", name, got, want)
		}
	}
}
