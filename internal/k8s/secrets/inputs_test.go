package secrets

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/pki"
)

func pemPair(p *pki.CertAndKey) *configs.PEMCertificateAndKey {
	return &configs.PEMCertificateAndKey{Crt: configs.Base64(p.Crt), Key: configs.Base64(p.Key)}
}

func testConfig(cas testCAs, machineType string) *configs.Config {
	return &configs.Config{
		Machine: &configs.MachineConfig{Type: machineType},
		Cluster: &configs.ClusterConfig{
			ClusterName:               "talos-test",
			ControlPlane:              &configs.ControlPlaneConfig{Endpoint: "https://k8s.example.com:6443"},
			Token:                     testToken,
			SecretboxEncryptionSecret: testSecretbox,
			CA:                        pemPair(cas.k8s),
			AcceptedCAs:               []configs.PEMCertificate{{Crt: configs.Base64(cas.accepted.Crt)}},
			AggregatorCA:              pemPair(cas.aggregator),
			ServiceAccount:            &configs.PEMKey{Key: configs.Base64(cas.saKey)},
			Etcd:                      &configs.EtcdConfig{CA: pemPair(cas.etcd)},
		},
	}
}

func TestFromConfigControlPlane(t *testing.T) {
	cas := newTestCAs(t)
	cfg := testConfig(cas, configs.MachineTypeControlPlane)
	addrs := []netip.Addr{netip.MustParseAddr("172.20.0.2")}

	in, err := FromConfig(cfg, "cp-1", "cp-1.example.com", addrs)
	if err != nil {
		t.Fatalf("FromConfig: %v", err)
	}

	if in.ClusterName != "talos-test" || in.Endpoint.String() != "https://k8s.example.com:6443" || in.Hostname != "cp-1" ||
		in.FQDN != "cp-1.example.com" || !slices.Equal(in.NodeAddresses, addrs) || in.Token != testToken ||
		in.SecretboxEncryptionSecret != testSecretbox {
		t.Errorf("inputs = %+v", in)
	}

	if in.LocalAPIServerPort != 6443 || in.DNSDomain != "cluster.local" || !slices.Equal(in.ServiceSubnets, []string{"10.96.0.0/12"}) ||
		in.Validity != 365*24*time.Hour || in.AdminKubeconfigLifetime != 365*24*time.Hour || in.Now == nil {
		t.Errorf("defaults not applied: %+v", in)
	}

	if !bytes.Equal(in.CA.Key, cas.k8s.Key) || !bytes.Equal(in.AggregatorCA.Crt, cas.aggregator.Crt) ||
		!bytes.Equal(in.EtcdCA.Key, cas.etcd.Key) || !bytes.Equal(in.ServiceAccountKey, cas.saKey) || len(in.AcceptedCAs) != 1 {
		t.Error("secrets not carried over")
	}

	// Everything a control plane needs must be issuable from these inputs.
	if _, err := IssueStaticPodCerts(in); err != nil {
		t.Errorf("IssueStaticPodCerts: %v", err)
	}
}

func TestFromConfigOverrides(t *testing.T) {
	cas := newTestCAs(t)
	cfg := testConfig(cas, configs.MachineTypeControlPlane)
	cfg.Cluster.ControlPlane.LocalAPIServerPort = 7443
	// A trailing dot and capitals are Talos's; the certificates name corp.internal.
	cfg.Cluster.Network = &configs.ClusterNetworkConfig{DNSDomain: "Corp.Internal.", ServiceSubnets: []string{"10.200.0.0/16"}}
	cfg.Cluster.APIServer = &configs.APIServerConfig{CertSANs: []string{"10.5.0.100"}}
	cfg.Cluster.AdminKubeconfig = &configs.AdminKubeconfig{CertLifetime: 2 * time.Hour}

	in, err := FromConfig(cfg, "cp-1", "", nil)
	if err != nil {
		t.Fatal(err)
	}

	if in.LocalAPIServerPort != 7443 || in.DNSDomain != "corp.internal" || !slices.Equal(in.ServiceSubnets, []string{"10.200.0.0/16"}) ||
		!slices.Equal(in.CertSANs, []string{"10.5.0.100"}) || in.AdminKubeconfigLifetime != 2*time.Hour {
		t.Errorf("overrides not applied: %+v", in)
	}
}

func TestFromConfigWorker(t *testing.T) {
	cas := newTestCAs(t)
	cfg := testConfig(cas, configs.MachineTypeWorker)
	cfg.Cluster.CA.Key = nil
	cfg.Cluster.AggregatorCA = nil
	cfg.Cluster.ServiceAccount = nil
	cfg.Cluster.Etcd = nil
	cfg.Cluster.SecretboxEncryptionSecret = ""

	in, err := FromConfig(cfg, "w-1", "", nil)
	if err != nil {
		t.Fatalf("FromConfig: %v", err)
	}

	if in.CA == nil || in.CA.Key != nil || in.AggregatorCA != nil || in.EtcdCA != nil {
		t.Errorf("worker inputs = %+v", in)
	}

	if _, err := BootstrapKubeconfig(in.Endpoint.String(), [][]byte{AcceptedCABundle(in)}, in.Token); err != nil {
		t.Errorf("worker cannot build its bootstrap kubeconfig: %v", err)
	}
}

func TestFromConfigErrors(t *testing.T) {
	cas := newTestCAs(t)

	tests := []struct {
		name   string
		worker bool
		mutate func(*configs.ClusterConfig)
		want   []string
	}{
		{"no CA", false, func(c *configs.ClusterConfig) { c.CA = nil }, []string{"cluster.ca: certificate is missing"}},
		{"no CA on worker", true, func(c *configs.ClusterConfig) { c.CA = nil }, []string{"cluster.ca: certificate is missing"}},
		{"no CA key", false, func(c *configs.ClusterConfig) { c.CA.Key = nil }, []string{"cluster.ca: key is missing"}},
		{"CA key mismatch", false, func(c *configs.ClusterConfig) { c.CA.Key = configs.Base64(cas.etcd.Key) },
			[]string{"cluster.ca: private key does not match"}},
		{"garbage CA", true, func(c *configs.ClusterConfig) { c.CA.Crt = configs.Base64("junk") }, []string{"cluster.ca: parse certificate"}},
		{"no endpoint", false, func(c *configs.ClusterConfig) { c.ControlPlane = nil },
			[]string{"cluster.controlPlane.endpoint: endpoint is missing"}},
		{"http endpoint", false, func(c *configs.ClusterConfig) { c.ControlPlane.Endpoint = "http://x:6443" },
			[]string{"cluster.controlPlane.endpoint: invalid endpoint"}},
		{"bad local port", false, func(c *configs.ClusterConfig) { c.ControlPlane.LocalAPIServerPort = 70000 },
			[]string{"cluster.controlPlane.localAPIServerPort"}},
		{"no cluster name", false, func(c *configs.ClusterConfig) { c.ClusterName = "" }, []string{"cluster.clusterName"}},
		{"bad token", false, func(c *configs.ClusterConfig) { c.Token = "x" }, []string{"cluster.token"}},
		{"bad service subnet", false, func(c *configs.ClusterConfig) {
			c.Network = &configs.ClusterNetworkConfig{ServiceSubnets: []string{"x"}}
		}, []string{"cluster.network.serviceSubnets"}},
		{"bad accepted CA", false, func(c *configs.ClusterConfig) {
			c.AcceptedCAs = append(c.AcceptedCAs, configs.PEMCertificate{Crt: configs.Base64("junk")})
		}, []string{"cluster.acceptedCAs[1].crt"}},
		{"no aggregator CA", false, func(c *configs.ClusterConfig) { c.AggregatorCA = nil }, []string{"cluster.aggregatorCA"}},
		{"no etcd CA", false, func(c *configs.ClusterConfig) { c.Etcd = nil }, []string{"cluster.etcd.ca: certificate is missing"}},
		{"no etcd CA key", false, func(c *configs.ClusterConfig) { c.Etcd.CA.Key = nil }, []string{"cluster.etcd.ca: key is missing"}},
		{"no service account", false, func(c *configs.ClusterConfig) { c.ServiceAccount = nil },
			[]string{"cluster.serviceAccount.key: service account key is missing"}},
		{"ed25519 service account", false, func(c *configs.ClusterConfig) {
			key, _ := pki.GenerateKeyPEM(pki.Ed25519)
			c.ServiceAccount.Key = key
		}, []string{"cluster.serviceAccount.key: unsupported service account key"}},
		{"several at once", false, func(c *configs.ClusterConfig) { c.CA, c.ControlPlane = nil, nil },
			[]string{"cluster.ca:", "cluster.controlPlane.endpoint:"}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := configs.MachineTypeControlPlane
			if tt.worker {
				typ = configs.MachineTypeWorker
			}

			cfg := testConfig(cas, typ)
			tt.mutate(cfg.Cluster)

			_, err := FromConfig(cfg, "n", "", nil)
			if err == nil {
				t.Fatal("FromConfig succeeded")
			}

			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}

	if _, err := FromConfig(&configs.Config{}, "n", "", nil); err == nil || !strings.Contains(err.Error(), "cluster:") {
		t.Errorf("no cluster section: error = %v", err)
	}
}

func TestAcceptedCABundle(t *testing.T) {
	cas := newTestCAs(t)

	tests := []struct {
		name  string
		in    Inputs
		certs int
	}{
		{"CA only", Inputs{CA: cas.k8s}, 1},
		{"CA and accepted", Inputs{CA: cas.k8s, AcceptedCAs: [][]byte{cas.accepted.Crt}}, 2},
		{"accepted repeats the CA", Inputs{CA: cas.k8s, AcceptedCAs: [][]byte{cas.k8s.Crt, cas.accepted.Crt, cas.accepted.Crt}}, 2},
		{"missing trailing newline", Inputs{CA: &pki.CertAndKey{Crt: bytes.TrimSpace(cas.k8s.Crt)}, AcceptedCAs: [][]byte{cas.accepted.Crt}}, 2},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AcceptedCABundle(tt.in)
			if n := pemCount(got); n != tt.certs {
				t.Errorf("bundle holds %d certificates, want %d:\n%s", n, tt.certs, got)
			}

			if !bytes.HasPrefix(got, bytes.TrimSpace(cas.k8s.Crt)) {
				t.Error("the issuing CA must come first")
			}
		})
	}
}
