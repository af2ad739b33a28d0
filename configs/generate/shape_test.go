package generate_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
)

// TestGenerateShapeMatchesTalos: each contract from v1.12 on writes what
// `talosctl gen config --talos-version` writes (Talos's stability base
// configs, configs/testdata/talos/stability): the same documents, of the
// same kinds, in the same order, with the same fields. The differences
// allowed are talosbox's own: the install section gen config always has
// (its --install-disk default), the fields Talos writes at their zero
// value, and the documents of kinds talosbox does not implement yet, for
// which the v1alpha1 fields that say the same stay.
func TestGenerateShapeMatchesTalos(t *testing.T) {
	t.Parallel()

	// What the v1alpha1 document keeps when talosbox lacks the kind that
	// takes it over.
	fallback := map[string][]string{
		"DiscoveryServiceConfig":  {"v1alpha1.cluster.discovery."},
		"DiscoveryIdentityConfig": {"v1alpha1.cluster.id", "v1alpha1.cluster.secret"},
		"ResolverConfig":          {"v1alpha1.machine.features.hostDNS."},
		"UnattendedInstallConfig": {"v1alpha1.machine.install."},
	}

	for _, version := range []string{"v1.12", "v1.13", "v1.14", "v1.15"} {
		c, err := generate.ParseContract(version)
		if err != nil {
			t.Fatal(err)
		}

		out, err := generate.Generate(generate.Options{ClusterName: "base", Endpoint: "https://base:6443", Contract: c, Secrets: sharedBundle(t)})
		if err != nil {
			t.Fatal(err)
		}

		for _, cfg := range []*configs.Config{out.ControlPlane, out.Worker} {
			typ := cfg.Machine.Type

			t.Run(version+"/"+typ, func(t *testing.T) {
				data, err := cfg.Encode()
				if err != nil {
					t.Fatal(err)
				}

				want, err := os.ReadFile("../testdata/talos/stability/" + version + "/base-" + typ + ".yaml")
				if err != nil {
					t.Fatal(err)
				}

				gotKinds, gotPaths := shape(t, data)
				wantKinds, wantPaths := shape(t, want)

				// The kinds, in order, but those talosbox does not read.
				var implemented []string

				for _, k := range wantKinds {
					if _, known := configs.KindNamed(k); known || k == "v1alpha1" {
						implemented = append(implemented, k)
					}
				}

				if !slices.Equal(gotKinds, implemented) {
					t.Errorf("document kinds:\n got  %v\n want %v", gotKinds, implemented)
				}

				allowed := func(p string, ours bool) bool {
					kind, _, _ := strings.Cut(p, ".")
					kind, _, _ = strings.Cut(kind, "/")

					if _, known := configs.KindNamed(kind); !ours && kind != "v1alpha1" && !known {
						return true // a document talosbox does not read
					}

					for k, prefixes := range fallback {
						if _, known := configs.KindNamed(k); known || !ours {
							continue
						}

						for _, pre := range prefixes {
							if strings.HasPrefix(p, pre) {
								return true
							}
						}
					}

					switch {
					case ours:
						// gen config's --install-disk and --install-image.
						return p == "v1alpha1.machine.install.disk" || p == "v1alpha1.machine.install.image"
					default:
						// Written by Talos at their zero value.
						return p == "v1alpha1.machine.certSANs[]" || p == "v1alpha1.machine.install.wipe" ||
							strings.HasSuffix(p, ".ca.key") && typ == configs.MachineTypeWorker
					}
				}

				for _, p := range gotPaths {
					if !slices.Contains(wantPaths, p) && !allowed(p, true) {
						t.Errorf("written, but not by Talos: %s", p)
					}
				}

				for _, p := range wantPaths {
					if !slices.Contains(gotPaths, p) && !allowed(p, false) {
						t.Errorf("written by Talos, missing: %s", p)
					}
				}
			})
		}
	}
}

// shape is a config's documents' kinds ("v1alpha1" for that one) in
// order, and every path to a value: kind(/name).key.key..., "[]" for a
// list, "={}" for an empty mapping.
func shape(t *testing.T, data []byte) (kinds, paths []string) {
	t.Helper()

	dec := yaml.NewDecoder(bytes.NewReader(data))

	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}

		kind, _ := m["kind"].(string)
		if kind == "" {
			kind = "v1alpha1"
		}

		kinds = append(kinds, kind)

		id := kind
		if name, ok := m["name"].(string); ok {
			id += "/" + name
		}

		leafPaths(id, m, &paths)
	}

	slices.Sort(paths)

	return kinds, paths
}

func leafPaths(prefix string, v any, out *[]string) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			*out = append(*out, prefix+"={}")
		}

		for k, x := range t {
			leafPaths(prefix+"."+k, x, out)
		}
	case []any:
		*out = append(*out, prefix+"[]")
	default:
		*out = append(*out, prefix)
	}
}

// TestGenerateKubernetesDocumentsFromBundle: the Kubernetes documents of
// the v1.14 contract carry the bundle's secrets, PEM as Talos writes
// them, and mean what the v1.13 contract's cluster section means: the
// node's effective config is the same but for what Talos 1.14 changed
// (the API server reads the structured authentication config, and the
// documents' defaults).
func TestGenerateKubernetesDocumentsFromBundle(t *testing.T) {
	t.Parallel()

	b := sharedBundle(t)
	opts := generate.Options{ClusterName: "lab", Endpoint: "https://lab:6443", Secrets: b, AdditionalSANs: []string{"lab.example.com"}}

	opts.Contract = generate.Current
	docs, err := generate.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}

	opts.Contract = generate.Default
	classic, err := generate.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}

	cp := docs.ControlPlane

	ca := configs.DocumentOf[*configs.KubeAPIServerCAConfig](cp)
	agg := configs.DocumentOf[*configs.KubeAggregatorCAConfig](cp)
	sa := configs.DocumentOf[*configs.KubeServiceAccountConfig](cp)
	enc := configs.DocumentOf[*configs.KubeEtcdEncryptionConfig](cp)

	switch {
	case ca == nil || agg == nil || sa == nil || enc == nil:
		t.Fatal("the control plane lacks the CA, aggregator, service account or encryption document")
	case ca.IssuingCA.Cert != string(b.Certs.K8s.Crt) || ca.IssuingCA.Key != string(b.Certs.K8s.Key):
		t.Error("KubeAPIServerCAConfig: not the bundle's Kubernetes CA")
	case agg.IssuingCA.Cert != string(b.Certs.K8sAggregator.Crt) || agg.IssuingCA.Key != string(b.Certs.K8sAggregator.Key):
		t.Error("KubeAggregatorCAConfig: not the bundle's aggregator CA")
	case sa.Issuer.PrivateKey != string(b.Certs.K8sServiceAccount.Key) || sa.Issuer.IssuerURL != "https://lab:6443":
		t.Errorf("KubeServiceAccountConfig: %+v", sa.Issuer.IssuerURL)
	case !strings.Contains(encodeValue(enc.Config), b.Secrets.SecretboxEncryptionSecret):
		t.Error("KubeEtcdEncryptionConfig: not the bundle's secretbox secret")
	case !strings.HasPrefix(ca.IssuingCA.Cert, "-----BEGIN CERTIFICATE-----"):
		t.Error("the documents hold base64, not PEM")
	}

	if w := configs.DocumentOf[*configs.KubeAPIServerCAConfig](docs.Worker); w == nil || w.IssuingCA != nil ||
		!slices.Equal(w.AcceptedCAs, []string{string(b.Certs.K8s.Crt)}) {
		t.Errorf("worker KubeAPIServerCAConfig: %+v", w)
	}

	// The effective configs: the same CAs, keys, images, network, labels
	// and taint; only what the documents add beyond v1alpha1 differs.
	for i, pair := range [][2]*configs.Config{{classic.ControlPlane, docs.ControlPlane}, {classic.Worker, docs.Worker}} {
		a, d := pair[0], pair[1]

		same := []struct {
			what string
			x, y any
		}{
			{"cluster.ca", a.Cluster.CA, d.Cluster.CA},
			{"cluster.aggregatorCA", a.Cluster.AggregatorCA, d.Cluster.AggregatorCA},
			{"cluster.serviceAccount", a.Cluster.ServiceAccount, d.Cluster.ServiceAccount},
			{"cluster.clusterName", a.Cluster.ClusterName, d.Cluster.ClusterName},
			{"cluster.controlPlane.endpoint", a.Cluster.ControlPlane.Endpoint, d.Cluster.ControlPlane.Endpoint},
			{"cluster.network.podSubnets", a.Cluster.Network.PodSubnets, d.Cluster.Network.PodSubnets},
			{"cluster.network.dnsDomain", a.Cluster.Network.DNSDomain, d.Cluster.Network.DNSDomain},
			{"machine.kubelet.image", a.Machine.Kubelet.Image, d.Machine.Kubelet.Image},
			// The role label v1alpha1 leaves to the node, the document lists.
			{"machine.nodeLabels", a.Machine.NodeLabels, withoutKey(d.Machine.NodeLabels, "node-role.kubernetes.io/control-plane")},
			{"machine.features.kubePrism", a.Machine.Features.KubePrism, d.Machine.Features.KubePrism},
			{"allowSchedulingOnControlPlanes", a.Cluster.AllowSchedulingOnControlPlanes, d.Cluster.AllowSchedulingOnControlPlanes},
		}

		if i == 0 {
			same = append(same,
				struct {
					what string
					x, y any
				}{"cluster.apiServer.image", a.Cluster.APIServer.Image, d.Cluster.APIServer.Image},
				struct {
					what string
					x, y any
				}{"cluster.apiServer.admissionControl", a.Cluster.APIServer.AdmissionControl, d.Cluster.APIServer.AdmissionControl},
			)
		}

		for _, s := range same {
			if encodeValue(s.x) != encodeValue(s.y) {
				t.Errorf("%s %s: v1.13 %s, v1.15 %s", a.Machine.Type, s.what, encodeValue(s.x), encodeValue(s.y))
			}
		}
	}
}

func encodeValue(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}

	return string(b)
}

func withoutKey(m map[string]string, key string) map[string]string {
	if m == nil {
		return nil
	}

	out := maps.Clone(m)
	delete(out, key)

	if len(out) == 0 {
		return nil
	}

	return out
}
