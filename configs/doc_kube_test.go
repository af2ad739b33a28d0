package configs_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
)

// The Kubernetes documents' tests start from what Talos 1.14's gen config
// writes (the stability base configs of configs/testdata/talos), the
// documents of the kinds talosbox does not implement left out, and change
// one document at a time.

// kubeBase is a v1.14-shaped config of machine type typ, as YAML
// documents.
func kubeBase(t *testing.T, typ string) []string {
	t.Helper()

	data, err := os.ReadFile("testdata/talos/stability/v1.14/base-" + typ + ".yaml")
	if err != nil {
		t.Fatal(err)
	}

	var out []string

	for _, d := range strings.Split(string(data), "\n---\n") {
		if kind := docKind(d); kind != "" {
			if _, known := configs.KindNamed(kind); !known {
				continue
			}
		}

		out = append(out, strings.TrimSuffix(d, "\n")+"\n")
	}

	return out
}

// docKind is a YAML document's kind, "" for the v1alpha1 document.
func docKind(d string) string {
	for _, l := range strings.Split(d, "\n") {
		if k, ok := strings.CutPrefix(l, "kind: "); ok {
			return k
		}
	}

	return ""
}

// docName is a YAML document's name key.
func docName(d string) string {
	for _, l := range strings.Split(d, "\n") {
		if n, ok := strings.CutPrefix(l, "name: "); ok {
			return n
		}
	}

	return ""
}

// kubeCase is one test of a Kubernetes document kind: the config is the
// base with doc in place of the base's document of the same kind (and
// name), or added; with drop, the base's documents of those kinds are
// left out; v1 is a strategic merge patch of the v1alpha1 document.
type kubeCase struct {
	name string
	// worker: the base is the worker's.
	worker bool
	doc    string
	drop   []string
	v1     string
	// The outcome: decodeErr, else the validation error and warning
	// each of them must contain ("" for none).
	decodeErr, err, warn string
	// fold, when the config is valid, checks the effective config.
	fold func(t *testing.T, cfg *configs.Config)
}

// text is the case's config.
func (tc kubeCase) text(t *testing.T) []byte {
	t.Helper()

	typ := "controlplane"
	if tc.worker {
		typ = "worker"
	}

	docs := kubeBase(t, typ)
	docs = slices.DeleteFunc(docs, func(d string) bool { return slices.Contains(tc.drop, docKind(d)) })

	if tc.doc != "" {
		doc := "apiVersion: v1alpha1\n" + strings.TrimPrefix(tc.doc, "\n")
		kind, name := docKind(doc), docName(doc)

		named, _ := configs.KindNamed(kind)
		i := slices.IndexFunc(docs, func(d string) bool { return docKind(d) == kind && (!named || docName(d) == name) })

		if i >= 0 {
			docs[i] = doc
		} else {
			docs = append(docs, doc)
		}
	}

	data := []byte(strings.Join(docs, "---\n"))

	if tc.v1 != "" {
		ps, err := configpatch.Parse([]byte(tc.v1))
		if err != nil {
			t.Fatal(err)
		}

		if data, err = configpatch.Apply(data, ps...); err != nil {
			t.Fatal(err)
		}
	}

	return data
}

// runKubeCases runs each case: decoded, validated in container mode, its
// effective config checked, and a valid one encoded and decoded again to
// the same config.
func runKubeCases(t *testing.T, cases []kubeCase) {
	t.Helper()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.text(t)

			cfg, warnings, err := configs.Load(data, configs.ModeContainer)

			switch {
			case tc.decodeErr != "":
				if cfg != nil || err == nil || !strings.Contains(err.Error(), tc.decodeErr) {
					t.Fatalf("decode: %v, want an error saying %q", err, tc.decodeErr)
				}

				return
			case tc.err == "" && err != nil:
				t.Fatalf("want a valid config, got %v\n%s", err, data)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("validate: %v, want an error saying %q", err, tc.err)
			}

			joined := strings.Join(warnings, "\n")

			switch {
			case tc.warn == "" && len(warnings) > 0:
				t.Errorf("unexpected warnings: %q", warnings)
			case tc.warn != "" && !strings.Contains(joined, tc.warn):
				t.Errorf("warnings %q, want one saying %q", warnings, tc.warn)
			}

			if err != nil {
				return
			}

			if tc.fold != nil {
				tc.fold(t, cfg)
			}

			sameAfterRoundTrip(t, cfg)
		})
	}
}

// sameAfterRoundTrip: the config encodes to what decodes to the same
// config, written the same way and meaning the same.
func sameAfterRoundTrip(t *testing.T, cfg *configs.Config) {
	t.Helper()

	out, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	again, err := configs.Decode(out)
	if err != nil {
		t.Fatalf("the encoding does not decode: %v\n%s", err, out)
	}

	if !configs.SameWritten(cfg, again) {
		t.Errorf("the encoding is written differently:\n%s", out)
	}

	if changes, err := configs.Compare(cfg, again); err != nil || len(changes) > 0 {
		t.Errorf("the encoding means something else: %v %v", changes, err)
	}
}

// patchCase is a patch addressed to a document of the base config and
// what the patched config must say.
type patchCase struct {
	name, patch string
	worker      bool
	check       func(t *testing.T, cfg *configs.Config)
}

// runPatchCases applies each patch to the base config through
// configpatch, as talosctl does, and checks the valid result.
func runPatchCases(t *testing.T, cases []patchCase) {
	t.Helper()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := kubeCase{worker: tc.worker}.text(t)

			ps, err := configpatch.Parse([]byte(tc.patch))
			if err != nil {
				t.Fatal(err)
			}

			out, err := configpatch.Apply(base, ps...)
			if err != nil {
				t.Fatalf("patch: %v", err)
			}

			cfg, _, err := configs.Load(out, configs.ModeContainer)
			if err != nil {
				t.Fatalf("the patched config is invalid: %v\n%s", err, out)
			}

			tc.check(t, cfg)
		})
	}
}

// TestKubeBaseConfigs: the Kubernetes documents Talos 1.14 writes, on a
// control plane and a worker, are valid, and fold into the v1alpha1
// fields that configured the same before.
func TestKubeBaseConfigs(t *testing.T) {
	runKubeCases(t, []kubeCase{
		{name: "controlplane", fold: func(t *testing.T, cfg *configs.Config) {
			c, m := cfg.Cluster, cfg.Machine

			switch {
			case c.ClusterName != "base" || c.ControlPlane.Endpoint != "https://base:6443":
				t.Errorf("cluster: %q %+v", c.ClusterName, c.ControlPlane)
			case c.APIServer.Image != "registry.k8s.io/kube-apiserver:v1.34.12" || len(c.APIServer.AdmissionControl) != 1 || len(c.APIServer.AuditPolicy) == 0:
				t.Errorf("apiServer: %+v", c.APIServer)
			case c.CA == nil || len(c.CA.Key) == 0 || c.AggregatorCA == nil || c.ServiceAccount == nil:
				t.Error("the CAs and the service account key are not folded")
			case c.Network.CNI == nil || c.Network.CNI.Name != "flannel" || c.Network.DNSDomain != "cluster.local":
				t.Errorf("network: %+v", c.Network)
			case m.Kubelet.Image != "ghcr.io/siderolabs/kubelet:v1.34.12" || !m.Kubelet.DefaultRuntimeSeccompProfileEnabled || !m.Kubelet.DisableManifestsDirectory:
				t.Errorf("kubelet: %+v", m.Kubelet)
			case c.AllowSchedulingOnControlPlanes:
				t.Error("the control-plane taint is listed: no scheduling on control planes")
			case m.Features.KubePrism == nil || m.Features.KubePrism.Port != 7445:
				t.Errorf("kubePrism: %+v", m.Features.KubePrism)
			case c.CoreDNS == nil || c.CoreDNS.Disabled || c.Proxy == nil || c.Proxy.Disabled:
				t.Error("CoreDNS and kube-proxy are on")
			}
		}},
		{name: "worker", worker: true, fold: func(t *testing.T, cfg *configs.Config) {
			c := cfg.Cluster
			if c.CA == nil || len(c.CA.Crt) == 0 || len(c.CA.Key) != 0 || len(c.AcceptedCAs) != 0 {
				t.Errorf("a worker's accepted CA is its cluster.ca, a certificate only: %+v", c.CA)
			}

			if c.APIServer != nil || c.AggregatorCA != nil {
				t.Error("a worker has no control plane")
			}
		}},
	})
}
