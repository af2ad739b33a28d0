package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// rtIdentity is a DiscoveryIdentityConfig, as gen config writes it.
const rtIdentity = "apiVersion: v1alpha1\nkind: DiscoveryIdentityConfig\nclusterID: 0raF93qnkMvF-FZNuvyGozXNdLiT2FOWSlyBaW4PR-w=\n" +
	"clusterSecret: pofHbABZq7VXuObsdLdy/bHmz6hlMHZ3p8+6WKrv1ic=\n"

func rtDiscoveryService(name, endpoint string) string {
	return "apiVersion: v1alpha1\nkind: DiscoveryServiceConfig\nname: " + name + "\nendpoint: " + endpoint + "\n"
}

func TestDiscoveryServiceConfig(t *testing.T) {
	t.Parallel()

	// serviceAt: discovery on, with the service at endpoint and, as
	// Talos has it with the document, the Kubernetes registry off.
	serviceAt := func(endpoint string) func(*testing.T, *configs.Config) {
		return func(t *testing.T, cfg *configs.Config) {
			d := cfg.Cluster.Discovery
			if d == nil || !d.Enabled || d.Registries == nil || d.Registries.Kubernetes == nil || !d.Registries.Kubernetes.Disabled ||
				d.Registries.Service == nil || d.Registries.Service.Disabled || d.Registries.Service.Endpoint != endpoint {
				t.Errorf("cluster.discovery = %+v, want the service at %s alone", d, endpoint)
			}
		}
	}

	rtRun(t, []rtCase{
		{name: "folded into cluster.discovery", docs: rtDiscoveryService("default", "https://discovery.talos.dev/") + "---\n" + rtIdentity,
			check: serviceAt("https://discovery.talos.dev/")},
		{name: "with the v1alpha1 cluster identity", v1: "cluster:\n  id: CZPUmBr3Gx4MMvi0B19DAinY63EkdNvdIR6DB/6Gyeo=\n  secret: osl4ueUh+FPVpu5+kDzajbscPIpYg71fSiar4N8Cl1o=\n",
			docs: rtDiscoveryService("default", "https://discovery.talos.dev/"), check: serviceAt("https://discovery.talos.dev/")},
		{name: "grpc:// is reached as https://, at its host and port", docs: rtDiscoveryService("omni", "grpc://omni.example.com:8093/") + "---\n" + rtIdentity,
			check: serviceAt("https://omni.example.com:8093/")},
		{name: "a path is not part of where Talos reaches the service", docs: rtDiscoveryService("lan", "http://10.5.0.1:3000/v1") + "---\n" + rtIdentity,
			check: serviceAt("http://10.5.0.1:3000/")},
		{name: "several services: the first is the v1alpha1 endpoint", docs: rtDiscoveryService("a", "https://a.example.com/") + "---\n" +
			rtDiscoveryService("b", "https://b.example.com/") + "---\n" + rtIdentity, check: serviceAt("https://a.example.com/")},
		{name: "no cluster identity", docs: rtDiscoveryService("default", "https://discovery.talos.dev/"),
			errs: []string{"cluster.id: cluster discovery service requires .cluster.id (or a DiscoveryIdentityConfig document)",
				"cluster.secret: cluster discovery service requires .cluster.secret (or a DiscoveryIdentityConfig document)"}},
		{name: "also in the v1alpha1 document", v1: "cluster:\n  discovery:\n    enabled: false\n", docs: rtDiscoveryService("default", "https://discovery.talos.dev/") + "---\n" + rtIdentity,
			errs: []string{`DiscoveryServiceConfig["default"]: the discovery service is already set in the v1alpha1 document (cluster.discovery): set it in one place`}},
		{name: "no name", docs: "apiVersion: v1alpha1\nkind: DiscoveryServiceConfig\nendpoint: https://discovery.talos.dev/\n---\n" + rtIdentity,
			errs: []string{`DiscoveryServiceConfig[""].name: name is required`}},
		{name: "no endpoint", docs: "apiVersion: v1alpha1\nkind: DiscoveryServiceConfig\nname: default\n---\n" + rtIdentity,
			errs: []string{`DiscoveryServiceConfig["default"].endpoint: endpoint is required`}},
		{name: "another scheme", docs: rtDiscoveryService("default", "ftp://discovery.talos.dev/") + "---\n" + rtIdentity,
			errs: []string{`DiscoveryServiceConfig["default"].endpoint: endpoint "ftp://discovery.talos.dev/": the scheme must be http://, https:// or grpc://`}},
		{name: "no host", docs: rtDiscoveryService("default", "https:///discovery") + "---\n" + rtIdentity,
			errs: []string{`DiscoveryServiceConfig["default"].endpoint: endpoint "https:///discovery" has no host`}},
		{name: "not a URL", docs: rtDiscoveryService("default", `"https://[::1"`) + "---\n" + rtIdentity,
			errs: []string{`DiscoveryServiceConfig["default"].endpoint: invalid endpoint "https://[::1"`}},
		{name: "an unknown field", docs: rtDiscoveryService("default", "https://discovery.talos.dev/") + "url: x\n", decodeErr: `unknown field "url"`},
		{name: "a wrong type", docs: "apiVersion: v1alpha1\nkind: DiscoveryServiceConfig\nname: default\nendpoint: {url: x}\n",
			decodeErr: `DiscoveryServiceConfig["default"].endpoint: expected a single value`},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, rtDiscoveryService("default", "https://discovery.talos.dev/")+"---\n"+rtDiscoveryService("b", "grpc://b:8093")+"---\n"+rtIdentity)
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", rtDiscoveryService("default", "https://discovery.example.com/")},
			{"json", `[{"op": "replace", "path": "/DiscoveryServiceConfig/default/endpoint", "value": "https://discovery.example.com/"}]`},
		} {
			cfg := rtPatched(t, rtDiscoveryService("default", "https://discovery.talos.dev/")+"---\n"+rtIdentity, p.patch)
			if got := cfg.Cluster.Discovery.Registries.Service.Endpoint; got != "https://discovery.example.com/" {
				t.Errorf("%s: endpoint %q", p.name, got)
			}
		}
	})

	// Talos's discovery service is not one talosbox's nodes talk to:
	// changing it is no reboot, as for cluster.discovery.
	t.Run("changes apply live", func(t *testing.T) {
		t.Parallel()

		if live, ok := configs.DocumentChangeLive(`DiscoveryServiceConfig["default"]`); !ok || !live {
			t.Errorf("DocumentChangeLive = %t, %t", live, ok)
		}
	})
}
