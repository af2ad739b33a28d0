package talos

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/pki"
)

// TestRotateKubernetesCAPatches: rotate-ca --kubernetes patches the
// Kubernetes CA where the node's config holds it: cluster.ca and
// cluster.acceptedCAs (v1.13), or the KubeAPIServerCAConfig document
// (v1.14, where setting cluster.ca would be a conflict the node refuses).
// Through the three steps, both shapes mean the same: every patched
// config is valid, and the CA and accepted CAs in effect are the same.
func TestRotateKubernetesCAPatches(t *testing.T) {
	bundle, err := pki.NewBundle(pki.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}

	next, err := pki.NewCA(pki.CAOptions{Organization: "kubernetes", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	sec := &caSection{name: "Kubernetes", path: "/cluster", current: bundle.Certs.K8s.Crt, next: next,
		get: func(cfg *configs.Config) (*configs.PEMCertificateAndKey, []configs.PEMCertificate) {
			return cfg.Cluster.CA, cfg.Cluster.AcceptedCAs
		}}

	steps := []struct {
		name   string
		change caChange
		// What is in effect after the step: the CA, and the accepted ones.
		ca       []byte
		accepted [][]byte
	}{
		{"add the new CA as accepted", addNewAccepted, bundle.Certs.K8s.Crt, [][]byte{next.Crt}},
		{"make it the issuing CA", swapCAs, next.Crt, [][]byte{bundle.Certs.K8s.Crt}},
		{"drop the old one", dropOld, next.Crt, nil},
	}

	for _, contract := range []generate.Contract{generate.Default, generate.Current} {
		out, err := generate.Generate(generate.Options{ClusterName: "rot", Endpoint: "https://10.5.0.2:6443", Secrets: bundle, Contract: contract})
		if err != nil {
			t.Fatal(err)
		}

		for _, start := range []*configs.Config{out.ControlPlane, out.Worker} {
			cp := start.IsControlPlane()

			data, err := start.Encode()
			if err != nil {
				t.Fatal(err)
			}

			for _, step := range steps {
				t.Run(contract.String()+"/"+start.Machine.Type+"/"+step.name, func(t *testing.T) {
					cfg, err := configs.Decode(data)
					if err != nil {
						t.Fatal(err)
					}

					oldCA, oldAccepted := sec.get(cfg)
					accepted, ca := step.change(sec, oldCA, oldAccepted, cp)

					ops, err := json.Marshal(caOps(cfg, sec, oldCA, ca, accepted, cp))
					if err != nil {
						t.Fatal(err)
					}

					ps, err := configpatch.Parse(ops)
					if err != nil {
						t.Fatal(err)
					}

					patched, err := configpatch.Apply(data, ps...)
					if err != nil {
						t.Fatal(err)
					}

					got, _, err := configs.Load(patched, configs.ModeContainer)
					if err != nil {
						t.Fatalf("the patched config is refused: %v\n%s", err, ops)
					}

					c := got.Cluster
					if !bytes.Equal(c.CA.Crt, step.ca) {
						t.Error("the CA in effect is not the step's")
					}

					if cp != (len(c.CA.Key) > 0) {
						t.Errorf("control plane %v, CA key present %v", cp, len(c.CA.Key) > 0)
					}

					var have [][]byte
					for _, a := range c.AcceptedCAs {
						have = append(have, a.Crt)
					}

					if !slices.EqualFunc(have, step.accepted, bytes.Equal) {
						t.Errorf("%d accepted CAs in effect, want %d", len(have), len(step.accepted))
					}

					// The v1.14 shape keeps it in its document.
					if doc := configs.DocumentOf[*configs.KubeAPIServerCAConfig](got); contract.AtLeast(1, 14) && (doc == nil || got.V1Alpha1().Cluster.CA != nil) {
						t.Error("the rotation wrote cluster.ca next to the KubeAPIServerCAConfig")
					}

					data = patched
				})
			}
		}
	}
}
