package configs_test

import (
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestDiscoveryIdentityConfig(t *testing.T) {
	t.Parallel()

	identity := func(id, secret string) string {
		return "apiVersion: v1alpha1\nkind: DiscoveryIdentityConfig\nclusterID: " + id + "\nclusterSecret: " + secret + "\n"
	}

	const (
		id     = "0raF93qnkMvF-FZNuvyGozXNdLiT2FOWSlyBaW4PR-w="
		secret = "pofHbABZq7VXuObsdLdy/bHmz6hlMHZ3p8+6WKrv1ic="
	)

	rtRun(t, []rtCase{
		{name: "folded into cluster.id and cluster.secret", docs: identity(id, secret), check: func(t *testing.T, cfg *configs.Config) {
			if cfg.Cluster.ID != id || cfg.Cluster.Secret != secret {
				t.Errorf("cluster.id %q, cluster.secret %q", cfg.Cluster.ID, cfg.Cluster.Secret)
			}
		}},
		{name: "also in the v1alpha1 document", v1: "cluster:\n  id: CZPUmBr3Gx4MMvi0B19DAinY63EkdNvdIR6DB/6Gyeo=\n", docs: identity(id, secret),
			errs: []string{"DiscoveryIdentityConfig: the cluster identity is already set in the v1alpha1 document (cluster.id/cluster.secret)"}},
		{name: "no clusterID", docs: "apiVersion: v1alpha1\nkind: DiscoveryIdentityConfig\nclusterSecret: " + secret + "\n",
			errs: []string{"DiscoveryIdentityConfig.clusterID: clusterID is required"}},
		{name: "no clusterSecret", docs: "apiVersion: v1alpha1\nkind: DiscoveryIdentityConfig\nclusterID: " + id + "\n",
			errs: []string{"DiscoveryIdentityConfig.clusterSecret: clusterSecret is required"}},
		// Talos wants 32 bytes where cluster.secret may be an AES key of
		// 16 or 24.
		{name: "a secret too short", docs: identity(id, "MDEyMzQ1Njc4OWFiY2RlZg=="),
			errs: []string{"DiscoveryIdentityConfig.clusterSecret: invalid clusterSecret: 16 bytes, want 32"}},
		// The standard alphabet, as Talos decodes it; cluster.secret's
		// rule, on the folded value, says it too.
		{name: "a secret in the URL-safe alphabet", docs: identity(id, "pofHbABZq7VXuObsdLdy_bHmz6hlMHZ3p8-6WKrv1ic="),
			errs: []string{"DiscoveryIdentityConfig.clusterSecret: invalid clusterSecret: it is not base64 (standard alphabet)"}},
		{name: "not base64", docs: identity(id, "not-base64!"),
			errs: []string{"DiscoveryIdentityConfig.clusterSecret: invalid clusterSecret: it is not base64", "DiscoveryIdentityConfig.clusterSecret: "}},
		{name: "an id as cluster.id's rule warns about it", docs: identity("short", secret), warns: []string{"DiscoveryIdentityConfig.clusterID: "}},
		{name: "an unknown field", docs: identity(id, secret) + "clusterName: x\n", decodeErr: `unknown field "clusterName"`},
		{name: "a wrong type", docs: identity("[a]", secret), decodeErr: "DiscoveryIdentityConfig.clusterID: expected a single value"},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, identity(id, secret))
	})

	t.Run("redacted", func(t *testing.T) {
		t.Parallel()

		out, err := rtDecode(t, rtText(t, "", identity(id, secret))).EncodeRedacted()
		if err != nil {
			t.Fatal(err)
		}

		if strings.Contains(string(out), secret) || !strings.Contains(string(out), "clusterSecret: \""+configs.Redacted+"\"") ||
			!strings.Contains(string(out), "clusterID: "+id) {
			t.Errorf("redacted:\n%s", out)
		}
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		const other = "osl4ueUh+FPVpu5+kDzajbscPIpYg71fSiar4N8Cl1o="

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", "apiVersion: v1alpha1\nkind: DiscoveryIdentityConfig\nclusterSecret: " + other + "\n"},
			{"json", `[{"op": "replace", "path": "/DiscoveryIdentityConfig/clusterSecret", "value": "` + other + `"}]`},
		} {
			if cfg := rtPatched(t, identity(id, secret), p.patch); cfg.Cluster.Secret != other || cfg.Cluster.ID != id {
				t.Errorf("%s: cluster.id %q, cluster.secret %q", p.name, cfg.Cluster.ID, cfg.Cluster.Secret)
			}
		}
	})
}
