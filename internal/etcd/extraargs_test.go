package etcd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/pkg/v3/featuregate"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/features"

	"github.com/talosbox/talosbox/configs"
)

func TestExtraArgs(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		args    configs.Args
		check   func(c *embed.Config) bool
		wantErr error  // sentinel, if any
		errText string // substring of the error
	}{
		{
			name:  "snapshot-count",
			args:  configs.ArgsOf(map[string]string{"snapshot-count": "5000"}),
			check: func(c *embed.Config) bool { return c.SnapshotCount == 5000 },
		},
		{
			name:  "quota-backend-bytes",
			args:  configs.ArgsOf(map[string]string{"quota-backend-bytes": "8589934592"}),
			check: func(c *embed.Config) bool { return c.QuotaBackendBytes == 8<<30 },
		},
		{
			name: "auto compaction",
			args: configs.ArgsOf(map[string]string{"auto-compaction-mode": "revision", "auto-compaction-retention": "1000"}),
			check: func(c *embed.Config) bool {
				return c.AutoCompactionMode == "revision" && c.AutoCompactionRetention == "1000"
			},
		},
		{
			name:  "raft timers",
			args:  configs.ArgsOf(map[string]string{"heartbeat-interval": "250", "election-timeout": "2500"}),
			check: func(c *embed.Config) bool { return c.TickMs == 250 && c.ElectionMs == 2500 },
		},
		{
			name:  "max-request-bytes and max-concurrent-streams",
			args:  configs.ArgsOf(map[string]string{"max-request-bytes": "10485760", "max-concurrent-streams": "100"}),
			check: func(c *embed.Config) bool { return c.MaxRequestBytes == 10<<20 && c.MaxConcurrentStreams == 100 },
		},
		{
			name: "durations",
			args: configs.ArgsOf(map[string]string{"watch-progress-notify-interval": "5s", "grpc-keepalive-timeout": "1m"}),
			check: func(c *embed.Config) bool {
				return c.WatchProgressNotifyInterval == 5*time.Second && c.GRPCKeepAliveTimeout == time.Minute
			},
		},
		{
			name:  "log-level",
			args:  configs.ArgsOf(map[string]string{"log-level": "warn"}),
			check: func(c *embed.Config) bool { return c.LogLevel == "warn" },
		},
		{
			name:  "leading dashes are tolerated",
			args:  configs.ArgsOf(map[string]string{"--snapshot-count": "7"}),
			check: func(c *embed.Config) bool { return c.SnapshotCount == 7 },
		},
		{
			name: "listen-metrics-urls",
			args: configs.ArgsOf(map[string]string{"listen-metrics-urls": "http://0.0.0.0:2381, http://[::]:2382"}),
			check: func(c *embed.Config) bool {
				return len(c.ListenMetricsUrls) == 2 && c.ListenMetricsUrls[1].Host == "[::]:2382"
			},
		},
		{
			name:  "experimental rename from etcd 3.5",
			args:  configs.ArgsOf(map[string]string{"experimental-compact-hash-check-time": "2m"}),
			check: func(c *embed.Config) bool { return c.CompactHashCheckTime == 2*time.Minute },
		},
		{
			name: "experimental flag that became a feature gate",
			args: configs.ArgsOf(map[string]string{"experimental-initial-corrupt-check": "true"}),
			check: func(c *embed.Config) bool {
				return c.ServerFeatureGate.Enabled(features.InitialCorruptCheck)
			},
		},
		{
			name: "feature-gates",
			args: configs.ArgsOf(map[string]string{"feature-gates": "InitialCorruptCheck=true,CompactHashCheck=true"}),
			check: func(c *embed.Config) bool {
				return c.ServerFeatureGate.Enabled(features.InitialCorruptCheck) && c.ServerFeatureGate.Enabled(features.CompactHashCheck)
			},
		},
		{
			name: "feature-gates repeated: each adds to the others",
			args: configs.Args{"feature-gates": configs.ArgList("InitialCorruptCheck=true", "CompactHashCheck=true")},
			check: func(c *embed.Config) bool {
				return c.ServerFeatureGate.Enabled(features.InitialCorruptCheck) && c.ServerFeatureGate.Enabled(features.CompactHashCheck)
			},
		},
		{
			name: "feature-gates repeated: a later value wins over an earlier one",
			args: configs.Args{"feature-gates": configs.ArgList("InitialCorruptCheck=true", "InitialCorruptCheck=false")},
			check: func(c *embed.Config) bool {
				return !c.ServerFeatureGate.Enabled(features.InitialCorruptCheck)
			},
		},
		{
			name:  "a one-item list is the flag once",
			args:  configs.Args{"snapshot-count": configs.ArgList("4000")},
			check: func(c *embed.Config) bool { return c.SnapshotCount == 4000 },
		},
		{
			name:  "an empty list sets nothing",
			args:  configs.Args{"snapshot-count": configs.ArgList()},
			check: func(c *embed.Config) bool { return c.SnapshotCount == embed.NewConfig().SnapshotCount },
		},
		{name: "a repeated flag etcd does not add up", args: configs.Args{"snapshot-count": configs.ArgList("1", "2")}, errText: `"snapshot-count" is given 2 times`},
		{name: "a repeated 3.5 gate flag", args: configs.Args{"experimental-initial-corrupt-check": configs.ArgList("true", "false")}, errText: "given 2 times"},
		{name: "owned, as an empty list", args: configs.Args{"name": configs.ArgList()}, wantErr: ErrArgOwned},
		{name: "a bad item of a list", args: configs.Args{"feature-gates": configs.ArgList("InitialCorruptCheck=true", "Nope=true")}, errText: `unknown feature gate "Nope"`},
		{name: "owned: name", args: configs.ArgsOf(map[string]string{"name": "evil"}), wantErr: ErrArgOwned, errText: `"name": managed by talosbox`},
		{name: "owned: data-dir", args: configs.ArgsOf(map[string]string{"data-dir": "/tmp"}), wantErr: ErrArgOwned},
		{name: "owned: initial-cluster-state", args: configs.ArgsOf(map[string]string{"initial-cluster-state": "new"}), wantErr: ErrArgOwned},
		{name: "owned: listen-client-urls", args: configs.ArgsOf(map[string]string{"listen-client-urls": "http://0.0.0.0:2379"}), wantErr: ErrArgOwned},
		{name: "owned: advertise-client-urls", args: configs.ArgsOf(map[string]string{"advertise-client-urls": "https://1.2.3.4:2379"}), wantErr: ErrArgOwned},
		{name: "owned: cert-file", args: configs.ArgsOf(map[string]string{"cert-file": "/x"}), wantErr: ErrArgOwned},
		{name: "owned: client-cert-auth", args: configs.ArgsOf(map[string]string{"client-cert-auth": "false"}), wantErr: ErrArgOwned},
		{name: "owned: peer-client-cert-auth", args: configs.ArgsOf(map[string]string{"peer-client-cert-auth": "false"}), wantErr: ErrArgOwned},
		{name: "owned: force-new-cluster", args: configs.ArgsOf(map[string]string{"force-new-cluster": "true"}), wantErr: ErrArgOwned},
		{name: "unknown key", args: configs.ArgsOf(map[string]string{"snapshot-cuont": "1"}), wantErr: ErrArgUnknown, errText: `"snapshot-cuont": not an etcd flag`},
		{name: "unknown experimental", args: configs.ArgsOf(map[string]string{"experimental-frobnicate": "true"}), wantErr: ErrArgUnknown},
		{name: "bad uint", args: configs.ArgsOf(map[string]string{"snapshot-count": "-1"}), errText: `snapshot-count="-1": want an unsigned integer`},
		{name: "uint32 overflow", args: configs.ArgsOf(map[string]string{"max-concurrent-streams": "4294967296"}), errText: "want an unsigned integer"},
		{name: "bad duration", args: configs.ArgsOf(map[string]string{"corrupt-check-time": "5"}), errText: `want a duration such as "5s"`},
		{name: "bad enum", args: configs.ArgsOf(map[string]string{"auto-compaction-mode": "hourly"}), errText: "want one of periodic, revision"},
		{name: "bad bool gate", args: configs.ArgsOf(map[string]string{"experimental-initial-corrupt-check": "yes"}), errText: "want true or false"},
		{name: "unknown gate", args: configs.ArgsOf(map[string]string{"feature-gates": "Frobnicate=true"}), errText: "unknown feature gate \"Frobnicate\""},
		{name: "bad metrics URL", args: configs.ArgsOf(map[string]string{"listen-metrics-urls": "0.0.0.0:2381"}), errText: "want http(s)://host:port"},
		{
			name:    "every bad key is reported",
			args:    configs.ArgsOf(map[string]string{"name": "x", "bogus": "1", "snapshot-count": "1"}),
			wantErr: ErrArgOwned,
			errText: `"bogus": not an etcd flag`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := embed.NewConfig()
			err := applyExtraArgs(cfg, tc.args)

			if tc.wantErr == nil && tc.errText == "" {
				if err != nil {
					t.Fatal(err)
				}

				if !tc.check(cfg) {
					t.Fatalf("%v not applied", tc.args)
				}

				return
			}

			if err == nil {
				t.Fatalf("%v accepted", tc.args)
			}

			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}

			if !strings.Contains(err.Error(), tc.errText) {
				t.Fatalf("got %q, want it to contain %q", err, tc.errText)
			}
		})
	}
}

func TestValidateExtraArgs(t *testing.T) {
	t.Parallel()

	if err := ValidateExtraArgs(configs.ArgsOf(map[string]string{"snapshot-count": "1000"})); err != nil {
		t.Fatal(err)
	}

	if err := ValidateExtraArgs(configs.ArgsOf(map[string]string{"trusted-ca-file": "/x"})); !errors.Is(err, ErrArgOwned) {
		t.Fatalf("got %v", err)
	}
}

// TestOptionsOverriddenByExtraArgs: the config's extraArgs win over the
// node-derived raft timers, and talosbox's TLS settings cannot be touched.
func TestOptionsOverriddenByExtraArgs(t *testing.T) {
	t.Parallel()

	o := testOptions(t, newTestCA(t), "cp-1")
	o.ExtraArgs = configs.ArgsOf(map[string]string{"election-timeout": "500"})

	r, err := o.resolve()
	if err != nil {
		t.Fatal(err)
	}

	cfg, _, err := r.embedConfig()
	if err != nil {
		t.Fatal(err)
	}

	if cfg.TickMs != 10 || cfg.ElectionMs != 500 {
		t.Fatalf("timers %d/%d, want 10/500", cfg.TickMs, cfg.ElectionMs)
	}

	if !cfg.ClientTLSInfo.ClientCertAuth || !cfg.PeerTLSInfo.ClientCertAuth || cfg.ClientTLSInfo.TrustedCAFile == "" {
		t.Fatal("mutual TLS is not required on both ports")
	}
}

// TestExtraArgsTablesAgree: every flag configs lets through lands
// somewhere here, and nothing lands that configs would refuse, so
// validation and the member agree on what extraArgs may hold.
func TestExtraArgsTablesAgree(t *testing.T) {
	t.Parallel()

	for name := range configs.EtcdArgs {
		if _, ok := extraArgs[name]; !ok {
			t.Errorf("configs.EtcdArgs has %q, which the member does not apply", name)
		}
	}

	for name := range extraArgs {
		if _, ok := configs.EtcdArgs[name]; !ok {
			t.Errorf("the member applies %q, which configs.EtcdArgs does not list", name)
		}
	}
}

// TestFeatureGatesCurrent: configs' generated list of etcd's gates is the
// one the linked etcd has (make generate rewrites it).
func TestFeatureGatesCurrent(t *testing.T) {
	t.Parallel()

	gates, ok := features.NewDefaultServerFeatureGate("etcd", nil).(featuregate.MutableFeatureGate)
	if !ok {
		t.Fatal("not a mutable gate")
	}

	all := gates.GetAll()

	if len(all) != len(configs.EtcdFeatureGates) {
		t.Errorf("etcd has %d gates, configs.EtcdFeatureGates %d: run make generate", len(all), len(configs.EtcdFeatureGates))
	}

	for f, spec := range all {
		got, ok := configs.EtcdFeatureGates[string(f)]
		if !ok || got.Default != spec.Default || got.LockToDefault != spec.LockToDefault {
			t.Errorf("gate %s: configs has %+v (known %t), etcd %+v: run make generate", f, got, ok, spec)
		}
	}
}
