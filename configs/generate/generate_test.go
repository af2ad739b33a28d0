package generate_test

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/version"
)

// bundle is shared by tests that do not care about fresh secrets, so the
// suite generates keys once.
var bundle = sync.OnceValues(func() (*pki.Bundle, error) {
	return pki.NewBundle(pki.BundleOptions{})
})

func sharedBundle(t *testing.T) *pki.Bundle {
	t.Helper()

	b, err := bundle()
	if err != nil {
		t.Fatal(err)
	}

	return b
}

func roundTrip(t *testing.T, cfg *configs.Config) {
	t.Helper()

	out, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	again, err := configs.Decode(out)
	if err != nil {
		t.Fatalf("generated config does not decode strictly: %v\n%s", err, out)
	}

	if !reflect.DeepEqual(cfg, again) {
		t.Fatalf("round trip changed the generated config:\n%s", out)
	}
}

func TestGenerateDefaults(t *testing.T) {
	t.Parallel()

	out, err := generate.Generate(generate.Options{ClusterName: "demo", Endpoint: "https://cp.example.com:6443"})
	if err != nil {
		t.Fatal(err)
	}

	b := out.Secrets
	cp, w := out.ControlPlane, out.Worker

	for _, cfg := range []*configs.Config{cp, w} {
		warnings, err := cfg.Validate(configs.ModeMetal, configs.WithStrict(true))
		if err != nil || warnings != nil {
			t.Fatalf("%s: want a clean strict validation, got %q, %v", cfg.Machine.Type, warnings, err)
		}

		roundTrip(t, cfg)

		m, c := cfg.Machine, cfg.Cluster
		if m.Token != b.TrustdInfo.Token || c.Token != b.Secrets.BootstrapToken || c.ID != b.Cluster.ID || c.Secret != b.Cluster.Secret {
			t.Errorf("%s: tokens or cluster identity do not come from the bundle", m.Type)
		}

		if m.Install.Disk != "/dev/sda" || m.Install.Image != "ghcr.io/talosbox/installer:"+version.Tag ||
			m.Kubelet.Image != images.Kubelet(images.Kubernetes).String() {
			t.Errorf("%s: unexpected install or kubelet defaults: %+v %+v", m.Type, m.Install, m.Kubelet)
		}

		n := c.Network
		if n.DNSDomain != "cluster.local" || !slices.Equal(n.PodSubnets, []string{"10.244.0.0/16"}) ||
			!slices.Equal(n.ServiceSubnets, []string{"10.96.0.0/12"}) || c.ControlPlane.Endpoint != "https://cp.example.com:6443" ||
			c.ClusterName != "demo" {
			t.Errorf("%s: unexpected cluster defaults: %+v", m.Type, c)
		}

		if !bytes.Equal(m.CA.Crt, b.Certs.OS.Crt) || !bytes.Equal(c.CA.Crt, b.Certs.K8s.Crt) {
			t.Errorf("%s: CA certificates do not come from the bundle", m.Type)
		}
	}

	// Control plane: every key of the bundle.
	if !bytes.Equal(cp.Machine.CA.Key, b.Certs.OS.Key) || !bytes.Equal(cp.Cluster.CA.Key, b.Certs.K8s.Key) ||
		!bytes.Equal(cp.Cluster.AggregatorCA.Key, b.Certs.K8sAggregator.Key) ||
		!bytes.Equal(cp.Cluster.ServiceAccount.Key, b.Certs.K8sServiceAccount.Key) ||
		!bytes.Equal(cp.Cluster.Etcd.CA.Key, b.Certs.Etcd.Key) || !bytes.Equal(cp.Cluster.Etcd.CA.Crt, b.Certs.Etcd.Crt) ||
		cp.Cluster.SecretboxEncryptionSecret != b.Secrets.SecretboxEncryptionSecret {
		t.Error("control-plane config lacks bundle secrets")
	}

	for _, pair := range []*configs.PEMCertificateAndKey{cp.Machine.CA, cp.Cluster.CA, cp.Cluster.AggregatorCA, cp.Cluster.Etcd.CA} {
		ck := pki.CertAndKey{Crt: pair.Crt, Key: pair.Key}
		if err := ck.Validate(); err != nil {
			t.Errorf("control-plane CA pair does not match: %v", err)
		}
	}

	if img := cp.Cluster.APIServer.Image; img != images.APIServer(images.Kubernetes).String() {
		t.Errorf("API server image = %q", img)
	}

	// From Talos 1.12 the endpoint is not written there: the node puts it
	// in the API server's certificate anyway.
	if len(cp.Cluster.APIServer.CertSANs) != 0 {
		t.Errorf("API server SANs = %q, want none", cp.Cluster.APIServer.CertSANs)
	}

	// Worker: certificates only, nothing that could sign.
	wc := w.Cluster
	if len(w.Machine.CA.Key) != 0 || len(wc.CA.Key) != 0 || wc.AggregatorCA != nil || wc.ServiceAccount != nil ||
		wc.Etcd != nil || wc.SecretboxEncryptionSecret != "" || wc.APIServer != nil {
		t.Errorf("worker config holds control-plane secrets: %+v", wc)
	}

	encoded, err := w.Encode()
	if err != nil {
		t.Fatal(err)
	}

	if strings.Contains(string(encoded), "key:") {
		t.Errorf("worker config has a key field:\n%s", encoded)
	}
}

func TestGenerateOptions(t *testing.T) {
	t.Parallel()

	b := sharedBundle(t)

	out, err := generate.Generate(generate.Options{
		ClusterName:       "lab",
		Endpoint:          "10.5.0.2",
		KubernetesVersion: "v1.33.4",
		InstallDisk:       "/dev/nvme0n1",
		InstallImage:      "registry.local/installer:v1",
		AdditionalSANs:    []string{"10.5.0.2", "lab.example.com"},
		DNSDomain:         "lab.local",
		RegistryMirrors:   map[string]string{"docker.io": "http://10.5.0.1:5000", "*": "http://10.5.0.1:6000"},
		PodSubnets:        []string{"10.200.0.0/16", "fd00:200::/56"},
		ServiceSubnets:    []string{"10.100.0.0/16"},
		Secrets:           b,
	})
	if err != nil {
		t.Fatal(err)
	}

	cp := out.ControlPlane
	if out.Secrets != b || cp.Cluster.ID != b.Cluster.ID {
		t.Fatal("the given bundle was not used")
	}

	if cp.Cluster.ControlPlane.Endpoint != "https://10.5.0.2:6443" {
		t.Errorf("endpoint = %q", cp.Cluster.ControlPlane.Endpoint)
	}

	if cp.Cluster.Scheduler.Image != "registry.k8s.io/kube-scheduler:v1.33.4" || cp.Machine.Kubelet.Image != "ghcr.io/siderolabs/kubelet:v1.33.4" {
		t.Errorf("images do not follow the Kubernetes version: %q %q", cp.Cluster.Scheduler.Image, cp.Machine.Kubelet.Image)
	}

	if cp.Machine.Install.Disk != "/dev/nvme0n1" || cp.Machine.Install.Image != "registry.local/installer:v1" {
		t.Errorf("install = %+v", cp.Machine.Install)
	}

	if !slices.Equal(cp.Machine.CertSANs, []string{"10.5.0.2", "lab.example.com"}) ||
		!slices.Equal(cp.Cluster.APIServer.CertSANs, []string{"10.5.0.2", "lab.example.com"}) {
		t.Errorf("SANs: machine %q, API server %q", cp.Machine.CertSANs, cp.Cluster.APIServer.CertSANs)
	}

	wantMirrors := map[string]configs.RegistryMirror{
		"docker.io": {Endpoints: []string{"http://10.5.0.1:5000"}},
		"*":         {Endpoints: []string{"http://10.5.0.1:6000"}},
	}
	for _, cfg := range []*configs.Config{cp, out.Worker} {
		if !reflect.DeepEqual(cfg.Machine.Registries.Mirrors, wantMirrors) {
			t.Errorf("%s mirrors = %+v", cfg.Machine.Type, cfg.Machine.Registries.Mirrors)
		}

		n := cfg.Cluster.Network
		if n.DNSDomain != "lab.local" || len(n.PodSubnets) != 2 || n.ServiceSubnets[0] != "10.100.0.0/16" {
			t.Errorf("%s network = %+v", cfg.Machine.Type, n)
		}

		roundTrip(t, cfg)
	}
}

// TestGenerateDoesNotAliasBundle checks that editing a generated config
// leaves the bundle (and so the next generated config) alone.
func TestGenerateDoesNotAliasBundle(t *testing.T) {
	t.Parallel()

	b := sharedBundle(t)
	want := bytes.Clone(b.Certs.OS.Key)

	out, err := generate.Generate(generate.Options{ClusterName: "x", Endpoint: "cp", Secrets: b})
	if err != nil {
		t.Fatal(err)
	}

	out.ControlPlane.Machine.CA.Key[0] ^= 0xff

	if !bytes.Equal(b.Certs.OS.Key, want) {
		t.Fatal("the bundle changed with the config")
	}
}

func TestGenerateErrors(t *testing.T) {
	t.Parallel()

	b := sharedBundle(t)

	tests := []struct {
		name string
		opts generate.Options
		want string
	}{
		{"no cluster name", generate.Options{Endpoint: "cp"}, "cluster name is required"},
		{"no endpoint", generate.Options{ClusterName: "x"}, "cluster endpoint is required"},
		{"http endpoint", generate.Options{ClusterName: "x", Endpoint: "http://cp:6443"},
			`invalid cluster endpoint "http://cp:6443": the control plane endpoint URL should have scheme https://`},
		{"bad version", generate.Options{ClusterName: "x", Endpoint: "cp", KubernetesVersion: "latest"},
			`invalid Kubernetes version "latest" (expected X.Y.Z)`},
		{"bad SAN", generate.Options{ClusterName: "x", Endpoint: "cp", AdditionalSANs: []string{"not a name"}},
			"generated controlplane config is invalid: 2 errors occurred:\n" +
				"\t* machine.certSANs[0]: invalid certificate SAN \"not a name\": must be an IP address or a DNS name\n" +
				"\t* cluster.apiServer.certSANs[0]: invalid certificate SAN \"not a name\": must be an IP address or a DNS name\n\n"},
		// From Talos 1.12 a mirror is a RegistryMirrorConfig document:
		// its own rule and the v1alpha1 one it folds into both say it.
		{"bad mirror", generate.Options{ClusterName: "x", Endpoint: "cp", RegistryMirrors: map[string]string{"docker.io": "10.5.0.1"}},
			"generated controlplane config is invalid: 2 errors occurred:\n" +
				"\t* RegistryMirrorConfig[\"docker.io\"].endpoints[0]: invalid mirror endpoint \"10.5.0.1\": has no scheme: want http:// or https://\n" +
				"\t* RegistryMirrorConfig[\"docker.io\"].endpoints[0].url: unsupported scheme \"\" in \"10.5.0.1\": want http or https\n\n"},
		{"bad subnet", generate.Options{ClusterName: "x", Endpoint: "cp", PodSubnets: []string{"10.0.0.0/99"}},
			"generated controlplane config is invalid: 1 error occurred:\n" +
				"\t* cluster.network.podSubnets[0]: invalid CIDR \"10.0.0.0/99\"\n\n"},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			tc.opts.Secrets = b

			_, err := generate.Generate(tc.opts)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got  %q\nwant %q", err, tc.want)
			}
		})
	}
}

func TestNormalizeEndpoint(t *testing.T) {
	t.Parallel()

	tests := map[string]string{
		"cp.example.com":                "https://cp.example.com:6443",
		"cp.example.com:7443":           "https://cp.example.com:7443",
		"https://cp.example.com":        "https://cp.example.com:6443",
		"https://cp.example.com:443/":   "https://cp.example.com:443",
		" 10.0.0.1 ":                    "https://10.0.0.1:6443",
		"fd00::1":                       "https://[fd00::1]:6443",
		"[fd00::1]:7000":                "https://[fd00::1]:7000",
		"https://[fd00::1]":             "https://[fd00::1]:6443",
		"":                              "error: cluster endpoint is required",
		"ftp://cp":                      `error: invalid cluster endpoint "ftp://cp": the control plane endpoint URL should have scheme https://`,
		"https://cp:6443/api":           `error: invalid cluster endpoint "https://cp:6443/api": only a scheme, host and port are allowed`,
		"https://:6443":                 `error: invalid cluster endpoint "https://:6443": host is missing`,
		"cp:70000":                      `error: invalid cluster endpoint "cp:70000": invalid port "70000"`,
		"cp example":                    `error: invalid cluster endpoint "cp example": invalid character " " in host name`,
		"https://user@cp.example.com:1": `error: invalid cluster endpoint "https://user@cp.example.com:1": only a scheme, host and port are allowed`,
	}

	for in, want := range tests {
		got, err := generate.NormalizeEndpoint(in)
		if err != nil {
			got = "error: " + err.Error()
		}

		if got != want {
			t.Errorf("NormalizeEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseRegistryMirror(t *testing.T) {
	t.Parallel()

	host, ep, err := generate.ParseRegistryMirror("*=http://10.5.0.1:6000")
	if err != nil || host != "*" || ep != "http://10.5.0.1:6000" {
		t.Fatalf("got %q %q %v", host, ep, err)
	}

	for _, bad := range []string{"docker.io", "=http://x", "docker.io="} {
		if _, _, err := generate.ParseRegistryMirror(bad); err == nil || !strings.Contains(err.Error(), "expected host=url") {
			t.Errorf("ParseRegistryMirror(%q) error = %v", bad, err)
		}
	}
}

// BenchmarkGenerate is one `gen config` without --with-secrets: a fresh
// bundle, both configs, validation and encoding.
func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()

	for b.Loop() {
		out, err := generate.Generate(generate.Options{ClusterName: "bench", Endpoint: "https://cp.example.com:6443"})
		if err != nil {
			b.Fatal(err)
		}

		for _, cfg := range []*configs.Config{out.ControlPlane, out.Worker} {
			if _, err := cfg.Encode(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestGeneratedImagesAreInTheDefaultList keeps gen config and `talosctl
// image default` on one list: every image a generated config names is one
// the image cache holds, for the default version and the previous minor.
func TestGeneratedImagesAreInTheDefaultList(t *testing.T) {
	b, err := bundle()
	if err != nil {
		t.Fatal(err)
	}

	for _, v := range images.KubernetesVersions() {
		out, err := generate.Generate(generate.Options{ClusterName: "c", Endpoint: "cp", KubernetesVersion: v, Secrets: b})
		if err != nil {
			t.Fatal(err)
		}

		var list []string
		for _, r := range images.Default(v) {
			list = append(list, r.String())
		}

		cl := out.ControlPlane.Cluster
		for _, img := range []string{
			out.ControlPlane.Machine.Kubelet.Image, out.Worker.Machine.Kubelet.Image,
			cl.APIServer.Image, cl.ControllerManager.Image, cl.Scheduler.Image, cl.Proxy.Image,
		} {
			if !slices.Contains(list, img) {
				t.Errorf("gen config --kubernetes-version %s uses %s, which image default does not list: %v", v, img, list)
			}
		}
	}
}
