package configs_test

import (
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// pemOf is the PEM text under key (cert, key, privateKey) of the base
// config's document of kind.
func pemOf(t *testing.T, kind, key string) string {
	t.Helper()

	for _, d := range kubeBase(t, "controlplane") {
		if docKind(d) != kind {
			continue
		}

		lines := strings.Split(d, "\n")
		for i, l := range lines {
			if strings.TrimSpace(l) != key+": |" {
				continue
			}

			indent := len(lines[i+1]) - len(strings.TrimLeft(lines[i+1], " "))

			var out []string

			for _, x := range lines[i+1:] {
				if len(x) < indent || strings.TrimSpace(x[:indent]) != "" {
					break
				}

				out = append(out, x[indent:])
			}

			return strings.Join(out, "\n") + "\n"
		}
	}

	t.Fatalf("no %s.%s in the base config", kind, key)

	return ""
}

// indentPEM writes PEM text as a YAML literal block at indent.
func indentPEM(pemText string, indent int) string {
	pad := strings.Repeat(" ", indent)

	return "|\n" + pad + strings.ReplaceAll(strings.TrimSuffix(pemText, "\n"), "\n", "\n"+pad) + "\n"
}

func TestKubeAPIServerCAConfig(t *testing.T) {
	caCert, caKey := pemOf(t, "KubeAPIServerCAConfig", "cert"), pemOf(t, "KubeAPIServerCAConfig", "key")
	other := pemOf(t, "KubeAggregatorCAConfig", "cert")

	rotating := "kind: KubeAPIServerCAConfig\nissuingCA:\n  cert: " + indentPEM(caCert, 4) + "  key: " + indentPEM(caKey, 4) +
		"acceptedCAs:\n  - " + indentPEM(other, 4)

	runKubeCases(t, []kubeCase{
		{name: "a control plane's issuing and accepted CAs", doc: rotating, fold: func(t *testing.T, cfg *configs.Config) {
			c := cfg.Cluster
			if string(c.CA.Crt) != caCert || string(c.CA.Key) != caKey || len(c.AcceptedCAs) != 1 || string(c.AcceptedCAs[0].Crt) != other {
				t.Errorf("ca %q accepted %d", c.CA.Crt, len(c.AcceptedCAs))
			}
		}},
		// A worker trusts the first accepted CA as its cluster.ca, the
		// others as accepted ones: what a rotation writes.
		{name: "a worker's accepted CAs", worker: true, doc: "kind: KubeAPIServerCAConfig\nacceptedCAs:\n  - " + indentPEM(caCert, 4) + "  - " + indentPEM(other, 4),
			fold: func(t *testing.T, cfg *configs.Config) {
				c := cfg.Cluster
				if string(c.CA.Crt) != caCert || len(c.CA.Key) != 0 || len(c.AcceptedCAs) != 1 || string(c.AcceptedCAs[0].Crt) != other {
					t.Errorf("worker ca %q accepted %d", c.CA.Crt, len(c.AcceptedCAs))
				}
			}},
		{name: "unknown field", doc: "kind: KubeAPIServerCAConfig\nissuingCA:\n  crt: x\n", decodeErr: `unknown field "crt" in KubeAPIServerCAConfig.issuingCA (did you mean "cert"?)`},
		{name: "wrong type", doc: "kind: KubeAPIServerCAConfig\nacceptedCAs: x\n", decodeErr: `KubeAPIServerCAConfig.acceptedCAs: expected a sequence`},
		{name: "empty", worker: true, doc: "kind: KubeAPIServerCAConfig\n", err: "KubeAPIServerCAConfig: neither issuingCA nor acceptedCAs"},
		{name: "no key", doc: "kind: KubeAPIServerCAConfig\nissuingCA:\n  cert: " + indentPEM(caCert, 4), err: "KubeAPIServerCAConfig.issuingCA.key: issuing CA: key is required"},
		{name: "base64, not PEM", doc: "kind: KubeAPIServerCAConfig\nacceptedCAs: [LS0tLS1CRUdJTg==]\n", worker: true,
			err: "KubeAPIServerCAConfig.acceptedCAs[0]: accepted CA #0: no PEM blocks found: write the PEM text itself"},
		{name: "a key that is not the certificate's", doc: "kind: KubeAPIServerCAConfig\nissuingCA:\n  cert: " + indentPEM(other, 4) + "  key: " + indentPEM(caKey, 4),
			err: "KubeAPIServerCAConfig.issuingCA.key: the private key does not belong to the certificate"},
		// A control plane issues certificates: it needs the issuing CA.
		{name: "a control plane without the issuing CA", doc: "kind: KubeAPIServerCAConfig\nacceptedCAs:\n  - " + indentPEM(caCert, 4),
			err: "KubeAPIServerCAConfig.issuingCA: issuingCA (cert and key) is required on control planes"},
		{name: "conflict", v1: "cluster:\n  ca:\n    crt: " + b64(caCert) + "\n",
			err: "KubeAPIServerCAConfig: the Kubernetes API CA is already set in the v1alpha1 document (cluster.ca)"},
	})

	runPatchCases(t, []patchCase{
		{name: "strategic merge adds an accepted CA", patch: "apiVersion: v1alpha1\nkind: KubeAPIServerCAConfig\nacceptedCAs:\n  - " + indentPEM(other, 4),
			check: func(t *testing.T, cfg *configs.Config) {
				if len(cfg.Cluster.AcceptedCAs) != 1 || string(cfg.Cluster.CA.Crt) != caCert {
					t.Errorf("accepted %d", len(cfg.Cluster.AcceptedCAs))
				}
			}},
		{name: "JSON patch", patch: `[{"op": "add", "path": "/KubeAPIServerCAConfig/acceptedCAs", "value": [` + jsonString(other) + `]}]`,
			check: func(t *testing.T, cfg *configs.Config) {
				if len(cfg.Cluster.AcceptedCAs) != 1 {
					t.Errorf("accepted %d", len(cfg.Cluster.AcceptedCAs))
				}
			}},
	})
}
