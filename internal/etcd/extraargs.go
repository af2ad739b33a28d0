package etcd

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/pkg/v3/featuregate"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/features"
)

// ErrArgOwned reports an extraArgs key this package sets itself.
var ErrArgOwned = errors.New("managed by talosbox, not settable in extraArgs")

// ErrArgUnknown reports an extraArgs key that is not a supported etcd flag.
var ErrArgUnknown = errors.New("not an etcd flag this member supports")

// ownedArgs are the etcd flags talosbox derives from the node (identity,
// URLs, TLS, cluster membership, data and log placement). Letting extraArgs
// override them would break joining, leaving or restoring.
var ownedArgs = setOf(
	"name", "data-dir", "wal-dir", "config-file",
	"initial-cluster", "initial-cluster-state", "initial-cluster-token",
	"initial-advertise-peer-urls", "advertise-client-urls",
	"listen-peer-urls", "listen-client-urls", "listen-client-http-urls",
	"cert-file", "key-file", "client-cert-file", "client-key-file",
	"trusted-ca-file", "client-cert-auth", "client-crl-file",
	"client-cert-allowed-hostname", "auto-tls",
	"peer-cert-file", "peer-key-file", "peer-client-cert-file", "peer-client-key-file",
	"peer-trusted-ca-file", "peer-client-cert-auth", "peer-crl-file", "peer-auto-tls",
	"peer-cert-allowed-cn", "peer-cert-allowed-hostname", "peer-skip-client-san-verification",
	"self-signed-cert-validity",
	"discovery", "discovery-srv", "discovery-srv-name", "discovery-token", "discovery-endpoints",
	// Recovery is Restore's job; the flag would force a new cluster on
	// every restart.
	"force-new-cluster",
	// Logs go to Options.Log.
	"logger", "log-outputs", "enable-log-rotation", "log-rotation-config-json",
)

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}

	return m
}

// argSetter parses one value into the embed config.
type argSetter func(cfg *embed.Config, value string) error

// extraArgs are the etcd flags that apply in-process, by flag name.
var extraArgs = map[string]argSetter{
	"snapshot-count":           uintArg(func(c *embed.Config) *uint64 { return &c.SnapshotCount }),
	"snapshot-catchup-entries": uintArg(func(c *embed.Config) *uint64 { return &c.SnapshotCatchUpEntries }),
	"max-snapshots":            uintArg(func(c *embed.Config) *uint { return &c.MaxSnapFiles }),
	"max-wals":                 uintArg(func(c *embed.Config) *uint { return &c.MaxWalFiles }),
	"heartbeat-interval":       uintArg(func(c *embed.Config) *uint { return &c.TickMs }),
	"election-timeout":         uintArg(func(c *embed.Config) *uint { return &c.ElectionMs }),
	"quota-backend-bytes":      intArg(func(c *embed.Config) *int64 { return &c.QuotaBackendBytes }),
	"max-request-bytes":        uintArg(func(c *embed.Config) *uint { return &c.MaxRequestBytes }),
	"max-txn-ops":              uintArg(func(c *embed.Config) *uint { return &c.MaxTxnOps }),
	"max-concurrent-streams":   uintArg(func(c *embed.Config) *uint32 { return &c.MaxConcurrentStreams }),
	"max-learners":             intArg(func(c *embed.Config) *int { return &c.MaxLearners }),

	"auto-compaction-mode":      enumArg([]string{"periodic", "revision"}, func(c *embed.Config) *string { return &c.AutoCompactionMode }),
	"auto-compaction-retention": stringArg(func(c *embed.Config) *string { return &c.AutoCompactionRetention }),
	"compaction-batch-limit":    intArg(func(c *embed.Config) *int { return &c.CompactionBatchLimit }),
	"compaction-sleep-interval": durationArg(func(c *embed.Config) *time.Duration { return &c.CompactionSleepInterval }),

	"backend-batch-interval":               durationArg(func(c *embed.Config) *time.Duration { return &c.BackendBatchInterval }),
	"backend-batch-limit":                  intArg(func(c *embed.Config) *int { return &c.BackendBatchLimit }),
	"backend-bbolt-freelist-type":          enumArg([]string{"map", "array"}, func(c *embed.Config) *string { return &c.BackendFreelistType }),
	"bootstrap-defrag-threshold-megabytes": uintArg(func(c *embed.Config) *uint { return &c.BootstrapDefragThresholdMegabytes }),

	"grpc-keepalive-min-time":        durationArg(func(c *embed.Config) *time.Duration { return &c.GRPCKeepAliveMinTime }),
	"grpc-keepalive-interval":        durationArg(func(c *embed.Config) *time.Duration { return &c.GRPCKeepAliveInterval }),
	"grpc-keepalive-timeout":         durationArg(func(c *embed.Config) *time.Duration { return &c.GRPCKeepAliveTimeout }),
	"corrupt-check-time":             durationArg(func(c *embed.Config) *time.Duration { return &c.CorruptCheckTime }),
	"compact-hash-check-time":        durationArg(func(c *embed.Config) *time.Duration { return &c.CompactHashCheckTime }),
	"watch-progress-notify-interval": durationArg(func(c *embed.Config) *time.Duration { return &c.WatchProgressNotifyInterval }),
	"warning-apply-duration":         durationArg(func(c *embed.Config) *time.Duration { return &c.WarningApplyDuration }),
	"warning-unary-request-duration": durationArg(func(c *embed.Config) *time.Duration { return &c.WarningUnaryRequestDuration }),
	"downgrade-check-time":           durationArg(func(c *embed.Config) *time.Duration { return &c.DowngradeCheckTime }),

	"pre-vote":                      boolArg(func(c *embed.Config) *bool { return &c.PreVote }),
	"strict-reconfig-check":         boolArg(func(c *embed.Config) *bool { return &c.StrictReconfigCheck }),
	"initial-election-tick-advance": boolArg(func(c *embed.Config) *bool { return &c.InitialElectionTickAdvance }),
	"enable-grpc-gateway":           boolArg(func(c *embed.Config) *bool { return &c.EnableGRPCGateway }),
	"enable-pprof":                  boolArg(func(c *embed.Config) *bool { return &c.EnablePprof }),
	"memory-mlock":                  boolArg(func(c *embed.Config) *bool { return &c.MemoryMlock }),
	"unsafe-no-fsync":               boolArg(func(c *embed.Config) *bool { return &c.UnsafeNoFsync }),
	"socket-reuse-port":             boolArg(func(c *embed.Config) *bool { return &c.SocketOpts.ReusePort }),
	"socket-reuse-address":          boolArg(func(c *embed.Config) *bool { return &c.SocketOpts.ReuseAddress }),

	"metrics":         enumArg([]string{"basic", "extensive"}, func(c *embed.Config) *string { return &c.Metrics }),
	"log-level":       enumArg([]string{"debug", "info", "warn", "error", "panic", "fatal"}, func(c *embed.Config) *string { return &c.LogLevel }),
	"log-format":      enumArg([]string{"json", "console"}, func(c *embed.Config) *string { return &c.LogFormat }),
	"tls-min-version": enumArg([]string{"TLS1.2", "TLS1.3"}, func(c *embed.Config) *string { return &c.TlsMinVersion }),
	"tls-max-version": enumArg([]string{"TLS1.2", "TLS1.3"}, func(c *embed.Config) *string { return &c.TlsMaxVersion }),
	"cipher-suites":   listArg(func(c *embed.Config) *[]string { return &c.CipherSuites }),

	// Prometheus scraping: Talos users commonly set http://0.0.0.0:2381.
	"listen-metrics-urls": setListenMetricsURLs,
	"feature-gates":       setFeatureGates,
}

// experimentalRenames are etcd 3.5 flags that 3.6 renamed and 3.7 removed;
// configs written for older Talos versions still carry them.
var experimentalRenames = map[string]string{
	"experimental-snapshot-catchup-entries":             "snapshot-catchup-entries",
	"experimental-compaction-batch-limit":               "compaction-batch-limit",
	"experimental-compaction-sleep-interval":            "compaction-sleep-interval",
	"experimental-corrupt-check-time":                   "corrupt-check-time",
	"experimental-compact-hash-check-time":              "compact-hash-check-time",
	"experimental-watch-progress-notify-interval":       "watch-progress-notify-interval",
	"experimental-warning-apply-duration":               "warning-apply-duration",
	"experimental-warning-unary-request-duration":       "warning-unary-request-duration",
	"experimental-downgrade-check-time":                 "downgrade-check-time",
	"experimental-memory-mlock":                         "memory-mlock",
	"experimental-bootstrap-defrag-threshold-megabytes": "bootstrap-defrag-threshold-megabytes",
	"experimental-max-learners":                         "max-learners",
}

// experimentalGates are etcd 3.5 boolean flags that became feature gates.
var experimentalGates = map[string]featuregate.Feature{
	"experimental-initial-corrupt-check":             features.InitialCorruptCheck,
	"experimental-compact-hash-check-enabled":        features.CompactHashCheck,
	"experimental-enable-lease-checkpoint":           features.LeaseCheckpoint,
	"experimental-stop-grpc-service-on-defrag":       features.StopGRPCServiceOnDefrag,
	"experimental-txn-mode-write-with-shared-buffer": features.TxnModeWriteWithSharedBuffer,
}

// applyExtraArgs sets cluster.etcd.extraArgs on an embed config, see
// ValidateExtraArgs.
func applyExtraArgs(cfg *embed.Config, args map[string]string) error {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}

	// Sorted, so feature-gates and an experimental gate apply in a fixed order.
	slices.Sort(keys)

	var errs []error

	for _, key := range keys {
		if err := applyArg(cfg, key, args[key]); err != nil {
			errs = append(errs, err)
		}
	}

	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("etcd extraArgs: %w", err)
	}

	return nil
}

// ValidateExtraArgs checks cluster.etcd.extraArgs as Start will apply them,
// so config validation can refuse a bad config before any member starts.
//
// Keys are etcd flag names ("quota-backend-bytes", "snapshot-count",
// "auto-compaction-retention", "listen-metrics-urls", "feature-gates", ...);
// the experimental-* names of etcd 3.5 map to their 3.6 names or feature
// gates. Keys talosbox owns (names, URLs, TLS files, cluster state, logging)
// fail with ErrArgOwned, unknown ones with ErrArgUnknown. Every bad key is
// reported, in key order.
func ValidateExtraArgs(args map[string]string) error {
	return applyExtraArgs(embed.NewConfig(), args)
}

func applyArg(cfg *embed.Config, key, value string) error {
	name := strings.TrimLeft(key, "-")

	if ownedArgs[name] {
		return fmt.Errorf("%q: %w", key, ErrArgOwned)
	}

	if renamed, ok := experimentalRenames[name]; ok {
		name = renamed
	}

	if gate, ok := experimentalGates[name]; ok {
		on, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("%s=%q: want true or false", key, value)
		}

		return setFeatureGates(cfg, fmt.Sprintf("%s=%t", gate, on))
	}

	set, ok := extraArgs[name]
	if !ok {
		return fmt.Errorf("%q: %w", key, ErrArgUnknown)
	}

	if err := set(cfg, value); err != nil {
		return fmt.Errorf("%s=%q: %w", key, value, err)
	}

	return nil
}

func uintArg[T uint | uint32 | uint64](field func(*embed.Config) *T) argSetter {
	return func(cfg *embed.Config, v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || uint64(T(n)) != n {
			return errors.New("want an unsigned integer")
		}

		*field(cfg) = T(n)

		return nil
	}
}

func intArg[T int | int64](field func(*embed.Config) *T) argSetter {
	return func(cfg *embed.Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || int64(T(n)) != n {
			return errors.New("want an integer")
		}

		*field(cfg) = T(n)

		return nil
	}
}

func durationArg(field func(*embed.Config) *time.Duration) argSetter {
	return func(cfg *embed.Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New(`want a duration such as "5s"`)
		}

		*field(cfg) = d

		return nil
	}
}

func boolArg(field func(*embed.Config) *bool) argSetter {
	return func(cfg *embed.Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("want true or false")
		}

		*field(cfg) = b

		return nil
	}
}

func stringArg(field func(*embed.Config) *string) argSetter {
	return func(cfg *embed.Config, v string) error {
		*field(cfg) = v

		return nil
	}
}

func enumArg(allowed []string, field func(*embed.Config) *string) argSetter {
	return func(cfg *embed.Config, v string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("want one of %s", strings.Join(allowed, ", "))
		}

		*field(cfg) = v

		return nil
	}
}

func listArg(field func(*embed.Config) *[]string) argSetter {
	return func(cfg *embed.Config, v string) error {
		*field(cfg) = splitList(v)

		return nil
	}
}

func splitList(v string) []string {
	var out []string

	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}

	return out
}

func setListenMetricsURLs(cfg *embed.Config, v string) error {
	var urls []url.URL

	for _, s := range splitList(v) {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Port() == "" {
			return fmt.Errorf("%q: want http(s)://host:port", s)
		}

		urls = append(urls, *u)
	}

	cfg.ListenMetricsUrls = urls

	return nil
}

// setFeatureGates applies "Gate=true,Other=false" on top of the gates set so far.
func setFeatureGates(cfg *embed.Config, v string) error {
	gates, ok := cfg.ServerFeatureGate.(featuregate.MutableFeatureGate)
	if !ok {
		return errors.New("feature gates are not settable")
	}

	if err := gates.Set(v); err != nil {
		return err
	}

	return nil
}
