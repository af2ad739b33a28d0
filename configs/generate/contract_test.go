package generate_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
)

func TestParseContract(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		in      string
		want    generate.Contract
		wantErr string
	}{
		{in: "v1.7", want: generate.Contract{Major: 1, Minor: 7}},
		{in: "1.7", want: generate.Contract{Major: 1, Minor: 7}},
		{in: "v1.7.4", want: generate.Contract{Major: 1, Minor: 7}},
		{in: "v1.8.0-beta.1", want: generate.Contract{Major: 1, Minor: 8}},
		{in: "v1.0", want: generate.Oldest},
		{in: "v1.15.2", want: generate.Current},
		{in: "banana", wantErr: "malformed Talos version: want one such as v1.15 or v1.15.4"},
		{in: "", wantErr: "malformed"},
		{in: "v1", wantErr: "malformed"},
		{in: "v1.7.x", wantErr: "malformed"},
		{in: "v1.7-beta", wantErr: "malformed"},
		{in: "v99999999999999999999.1", wantErr: "malformed Talos version: strconv.Atoi"},
		{in: "v0.8", wantErr: "not supported: the oldest contract this generator writes is v1.0 (v0.8 configs lack .cluster.aggregatorCA and use RSA keys)"},
		{in: "v0.7.3", wantErr: "(v0.7 configs lack .cluster.aggregatorCA"},
		{in: "v0.14", wantErr: "not supported: the oldest contract this generator writes is v1.0 (0.x configs predate"},
		{in: "v1.16", wantErr: "not supported: the newest contract this generator knows is v1.15"},
		{in: "v2.0", wantErr: "newest contract"},
	} {
		got, err := generate.ParseContract(tc.in)

		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("ParseContract(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseContract(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
		case tc.wantErr != "" && got != (generate.Contract{}):
			t.Errorf("ParseContract(%q) returned %v along with its error", tc.in, got)
		case strings.Contains(tc.wantErr, "not supported") && !errors.Is(err, generate.ErrUnsupportedContract):
			t.Errorf("ParseContract(%q): %v is not ErrUnsupportedContract", tc.in, err)
		}
	}
}

// Every version-dependent field of the generated configs, with the Talos
// version from which the contract writes it. A path starting with a
// capital is a typed document's (Kind.field, or Kind.name.field for named
// kinds); the others are the v1alpha1 document's.
var contractFields = []struct {
	path  string
	since generate.Contract // zero: every contract
	until generate.Contract // the first contract without it; zero: none
	only  string            // a machine type; "": both
	// doc, when set, is the kind that replaces the field from v1.14 once
	// talosbox implements it (until then the field stays).
	doc string
}{
	{path: "machine.features.rbac", until: v(1, 12)},
	{path: "cluster.discovery.enabled", doc: "DiscoveryServiceConfig"},
	{path: "cluster.discovery.registries.service", doc: "DiscoveryServiceConfig"},
	{path: "cluster.id", doc: "DiscoveryIdentityConfig"},
	{path: "cluster.clusterName", until: v(1, 14)},
	{path: "cluster.controlPlane.endpoint", until: v(1, 14)},
	{path: "cluster.aggregatorCA", only: configs.MachineTypeControlPlane, until: v(1, 14)},
	{path: "cluster.ca", until: v(1, 14)},
	{path: "cluster.apiServer.admissionControl", since: v(1, 1), until: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "cluster.apiServer.certSANs", until: v(1, 12), only: configs.MachineTypeControlPlane},
	{path: "machine.features.stableHostname", since: v(1, 2), until: v(1, 12)},
	{path: "machine.kubelet.defaultRuntimeSeccompProfileEnabled", since: v(1, 2), until: v(1, 14)},
	{path: "cluster.discovery.registries.kubernetes.disabled", since: v(1, 2), doc: "DiscoveryServiceConfig"},
	{path: "machine.features.apidCheckExtKeyUsage", since: v(1, 3), until: v(1, 12)},
	{path: "machine.kubelet.disableManifestsDirectory", since: v(1, 3), until: v(1, 14)},
	{path: "cluster.apiServer.auditPolicy", since: v(1, 3), until: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "cluster.aescbcEncryptionSecret", until: v(1, 3), only: configs.MachineTypeControlPlane},
	{path: "cluster.secretboxEncryptionSecret", since: v(1, 3), until: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "machine.features.diskQuotaSupport", since: v(1, 5)},
	{path: "machine.features.kubePrism.enabled", since: v(1, 6), until: v(1, 14)},
	{path: "machine.features.kubePrism.port", since: v(1, 6), until: v(1, 14)},
	{path: "machine.features.hostDNS.enabled", since: v(1, 7), doc: "ResolverConfig"},
	{path: "machine.features.hostDNS.forwardKubeDNSToHost", since: v(1, 8), doc: "ResolverConfig"},
	{path: "machine.nodeLabels", since: v(1, 8), until: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "machine.install.grubUseUKICmdline", since: v(1, 12), doc: "UnattendedInstallConfig"},
	{path: "machine.network", until: v(1, 13)},
	{path: "HostnameConfig.auto", since: v(1, 12)},
	{path: "KubeClusterConfig.clusterName", since: v(1, 14)},
	{path: "KubeClusterConfig.endpoint", since: v(1, 14)},
	{path: "KubeNodeConfig.nodeIP", since: v(1, 14)},
	{path: "KubeNodeConfig.labels", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeNodeConfig.taints", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeletConfig.image", since: v(1, 14)},
	{path: "KubeletConfig.defaultRuntimeSeccompProfileEnabled", since: v(1, 14)},
	{path: "KubeNetworkConfig.podSubnets", since: v(1, 14)},
	{path: "KubeAPIServerCAConfig.issuingCA.key", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeAPIServerCAConfig.acceptedCAs", since: v(1, 14), only: configs.MachineTypeWorker},
	{path: "KubePrismConfig.port", since: v(1, 14)},
	{path: "KubeAggregatorCAConfig.issuingCA", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeAdmissionControlConfig.PodSecurity.configuration", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeAuditPolicyConfig.configuration", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeAuthenticationConfig.configuration.anonymous", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeAuthorizerConfig.node.type", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeAuthorizerConfig.rbac.type", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeEtcdEncryptionConfig.config.resources", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeServiceAccountConfig.issuer.privateKey", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeAPIServerConfig.image", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeControllerManagerConfig.image", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeSchedulerConfig.image", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeProxyConfig.image", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeFlannelCNIConfig.backendType", since: v(1, 14), only: configs.MachineTypeControlPlane},
	{path: "KubeCoreDNSConfig.enabled", since: v(1, 14), only: configs.MachineTypeControlPlane},
}

func v(major, minor int) generate.Contract { return generate.Contract{Major: major, Minor: minor} }

// TestGenerateContracts: each contract from the oldest to the current one
// writes a field exactly when its Talos version reads and defaults it, and
// every contract's configs validate strictly and round-trip.
func TestGenerateContracts(t *testing.T) {
	t.Parallel()

	for minor := generate.Oldest.Minor; minor <= generate.Current.Minor; minor++ {
		c := generate.Contract{Major: 1, Minor: minor}

		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()

			// A new bundle each: contracts before v1.3 add their AES-CBC secret to it.
			out, err := generate.Generate(generate.Options{ClusterName: "demo", Endpoint: "https://cp.example.com:6443", Contract: c})
			if err != nil {
				t.Fatal(err)
			}

			for _, cfg := range []*configs.Config{out.ControlPlane, out.Worker} {
				if warnings, err := cfg.Validate(configs.ModeMetal, configs.WithStrict(true)); err != nil || warnings != nil {
					t.Fatalf("%s: want a clean strict validation, got %q, %v", cfg.Machine.Type, warnings, err)
				}

				roundTrip(t, cfg)

				doc := encodedTree(t, cfg)

				for _, f := range contractFields {
					if f.only != "" && f.only != cfg.Machine.Type {
						continue
					}

					until := f.until
					if _, known := configs.KindNamed(f.doc); f.doc != "" && known {
						until = v(1, 14)
					}

					want := c.AtLeast(f.since.Major, f.since.Minor) && (until == generate.Contract{} || !c.AtLeast(until.Major, until.Minor))
					if got := hasPath(doc, f.path); got != want {
						t.Errorf("%s %s: %s present = %v, want %v", c, cfg.Machine.Type, f.path, got, want)
					}
				}
			}
		})
	}
}

// TestGenerateDefaultContract: leaving the contract out writes today's
// Talos (v1.13), byte for byte; the current one (v1.15) is another.
func TestGenerateDefaultContract(t *testing.T) {
	t.Parallel()

	encode := func(c generate.Contract) string {
		out, err := generate.Generate(generate.Options{ClusterName: "demo", Endpoint: "10.0.0.1", Secrets: sharedBundle(t), Contract: c})
		if err != nil {
			t.Fatal(err)
		}

		var b strings.Builder

		for _, cfg := range []*configs.Config{out.ControlPlane, out.Worker} {
			doc, err := cfg.Encode()
			if err != nil {
				t.Fatal(err)
			}

			b.Write(doc)
		}

		return b.String()
	}

	if generate.Default != v(1, 13) {
		t.Fatalf("the default contract is %s, want v1.13", generate.Default)
	}

	if encode(generate.Contract{}) != encode(generate.Default) {
		t.Fatal("the zero contract does not write the default one")
	}

	if encode(generate.Default) == encode(generate.Current) {
		t.Fatal("the v1.15 contract writes the same configs as the default one")
	}
}

func TestGenerateRefusesUnsupportedContract(t *testing.T) {
	t.Parallel()

	for _, c := range []generate.Contract{{Major: 0, Minor: 14}, {Major: 1, Minor: 99}} {
		_, err := generate.Generate(generate.Options{ClusterName: "demo", Endpoint: "10.0.0.1", Secrets: sharedBundle(t), Contract: c})
		if !errors.Is(err, generate.ErrUnsupportedContract) || !strings.Contains(err.Error(), "talos version "+c.String()) {
			t.Errorf("contract %s: got %v, want ErrUnsupportedContract naming the version", c, err)
		}
	}
}

// TestGenerateOldContractWithSecrets: Talos before v1.3 needs the bundle's
// AES-CBC secret; a bundle without one is refused rather than given a
// secret that would differ on the next run.
func TestGenerateOldContractWithSecrets(t *testing.T) {
	t.Parallel()

	old := generate.Contract{Major: 1, Minor: 2}
	b := *sharedBundle(t) // a copy: the shared bundle stays as made

	_, err := generate.Generate(generate.Options{ClusterName: "demo", Endpoint: "10.0.0.1", Secrets: &b, Contract: old})
	if err == nil || !strings.Contains(err.Error(), "talos version v1.2: the secrets bundle has no aescbcencryptionsecret") {
		t.Fatalf("a bundle without an AES-CBC secret: got %v", err)
	}

	b.Secrets.AESCBCEncryptionSecret = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes

	out, err := generate.Generate(generate.Options{ClusterName: "demo", Endpoint: "10.0.0.1", Secrets: &b, Contract: old})
	if err != nil {
		t.Fatal(err)
	}

	if cl := out.ControlPlane.Cluster; cl.AESCBCEncryptionSecret != b.Secrets.AESCBCEncryptionSecret || cl.SecretboxEncryptionSecret != "" {
		t.Fatalf("v1.2 control plane: aescbc %q, secretbox %q; want the bundle's aescbc only", cl.AESCBCEncryptionSecret, cl.SecretboxEncryptionSecret)
	}
}

// encodedTree is the encoded config as one tree: the v1alpha1 document's
// keys, and each typed document under its kind (then its name, for the
// named kinds).
func encodedTree(t *testing.T, cfg *configs.Config) map[string]any {
	t.Helper()

	doc, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	tree := map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(doc))

	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return tree
		} else if err != nil {
			t.Fatal(err)
		}

		kind, _ := m["kind"].(string)
		if kind == "" {
			maps.Copy(tree, m)

			continue
		}

		if named, _ := configs.KindNamed(kind); named {
			byName, _ := tree[kind].(map[string]any)
			if byName == nil {
				byName = map[string]any{}
			}

			byName[m["name"].(string)] = m //nolint:forcetypeassert // a named document has a name
			tree[kind] = byName

			continue
		}

		tree[kind] = m
	}
}

// hasPath says whether the dotted path names a key in the tree.
func hasPath(tree map[string]any, path string) bool {
	var node any = tree

	for key := range strings.SplitSeq(path, ".") {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}

		if node, ok = m[key]; !ok {
			return false
		}
	}

	return true
}
