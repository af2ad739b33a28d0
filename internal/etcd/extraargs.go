package etcd

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/pkg/v3/featuregate"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/talosbox/talosbox/configs"
)

// ErrArgOwned reports an extraArgs key this package sets itself.
var ErrArgOwned = configs.ErrEtcdArgOwned

// ErrArgUnknown reports an extraArgs key that is not a supported etcd flag.
var ErrArgUnknown = configs.ErrEtcdArgUnknown

// argSetter puts one value, read by configs.ParseEtcdArg, into the embed
// config. Which flags exist and how their values read is configs' rule
// (configs.EtcdArgs), shared with config validation; this table only says
// where each lands.
type argSetter func(cfg *embed.Config, value any) error

var extraArgs = map[string]argSetter{
	"snapshot-count":           set(func(c *embed.Config, v uint64) { c.SnapshotCount = v }),
	"snapshot-catchup-entries": set(func(c *embed.Config, v uint64) { c.SnapshotCatchUpEntries = v }),
	"max-snapshots":            set(func(c *embed.Config, v uint64) { c.MaxSnapFiles = uint(v) }),
	"max-wals":                 set(func(c *embed.Config, v uint64) { c.MaxWalFiles = uint(v) }),
	"heartbeat-interval":       set(func(c *embed.Config, v uint64) { c.TickMs = uint(v) }),
	"election-timeout":         set(func(c *embed.Config, v uint64) { c.ElectionMs = uint(v) }),
	"quota-backend-bytes":      set(func(c *embed.Config, v int64) { c.QuotaBackendBytes = v }),
	"max-request-bytes":        set(func(c *embed.Config, v uint64) { c.MaxRequestBytes = uint(v) }),
	"max-txn-ops":              set(func(c *embed.Config, v uint64) { c.MaxTxnOps = uint(v) }),
	"max-concurrent-streams":   set(func(c *embed.Config, v uint64) { c.MaxConcurrentStreams = uint32(v) }),
	"max-learners":             set(func(c *embed.Config, v int64) { c.MaxLearners = int(v) }),

	"auto-compaction-mode":      set(func(c *embed.Config, v string) { c.AutoCompactionMode = v }),
	"auto-compaction-retention": set(func(c *embed.Config, v string) { c.AutoCompactionRetention = v }),
	"compaction-batch-limit":    set(func(c *embed.Config, v int64) { c.CompactionBatchLimit = int(v) }),
	"compaction-sleep-interval": set(func(c *embed.Config, v time.Duration) { c.CompactionSleepInterval = v }),

	"backend-batch-interval":               set(func(c *embed.Config, v time.Duration) { c.BackendBatchInterval = v }),
	"backend-batch-limit":                  set(func(c *embed.Config, v int64) { c.BackendBatchLimit = int(v) }),
	"backend-bbolt-freelist-type":          set(func(c *embed.Config, v string) { c.BackendFreelistType = v }),
	"bootstrap-defrag-threshold-megabytes": set(func(c *embed.Config, v uint64) { c.BootstrapDefragThresholdMegabytes = uint(v) }),

	"grpc-keepalive-min-time":        set(func(c *embed.Config, v time.Duration) { c.GRPCKeepAliveMinTime = v }),
	"grpc-keepalive-interval":        set(func(c *embed.Config, v time.Duration) { c.GRPCKeepAliveInterval = v }),
	"grpc-keepalive-timeout":         set(func(c *embed.Config, v time.Duration) { c.GRPCKeepAliveTimeout = v }),
	"corrupt-check-time":             set(func(c *embed.Config, v time.Duration) { c.CorruptCheckTime = v }),
	"compact-hash-check-time":        set(func(c *embed.Config, v time.Duration) { c.CompactHashCheckTime = v }),
	"watch-progress-notify-interval": set(func(c *embed.Config, v time.Duration) { c.WatchProgressNotifyInterval = v }),
	"warning-apply-duration":         set(func(c *embed.Config, v time.Duration) { c.WarningApplyDuration = v }),
	"warning-unary-request-duration": set(func(c *embed.Config, v time.Duration) { c.WarningUnaryRequestDuration = v }),
	"downgrade-check-time":           set(func(c *embed.Config, v time.Duration) { c.DowngradeCheckTime = v }),

	"pre-vote":                      set(func(c *embed.Config, v bool) { c.PreVote = v }),
	"strict-reconfig-check":         set(func(c *embed.Config, v bool) { c.StrictReconfigCheck = v }),
	"initial-election-tick-advance": set(func(c *embed.Config, v bool) { c.InitialElectionTickAdvance = v }),
	"enable-grpc-gateway":           set(func(c *embed.Config, v bool) { c.EnableGRPCGateway = v }),
	"enable-pprof":                  set(func(c *embed.Config, v bool) { c.EnablePprof = v }),
	"memory-mlock":                  set(func(c *embed.Config, v bool) { c.MemoryMlock = v }),
	"unsafe-no-fsync":               set(func(c *embed.Config, v bool) { c.UnsafeNoFsync = v }),
	"socket-reuse-port":             set(func(c *embed.Config, v bool) { c.SocketOpts.ReusePort = v }),
	"socket-reuse-address":          set(func(c *embed.Config, v bool) { c.SocketOpts.ReuseAddress = v }),

	"metrics":         set(func(c *embed.Config, v string) { c.Metrics = v }),
	"log-level":       set(func(c *embed.Config, v string) { c.LogLevel = v }),
	"log-format":      set(func(c *embed.Config, v string) { c.LogFormat = v }),
	"tls-min-version": set(func(c *embed.Config, v string) { c.TlsMinVersion = v }),
	"tls-max-version": set(func(c *embed.Config, v string) { c.TlsMaxVersion = v }),
	"cipher-suites":   set(func(c *embed.Config, v []string) { c.CipherSuites = v }),

	"listen-metrics-urls": set(func(c *embed.Config, v []url.URL) { c.ListenMetricsUrls = v }),
	"feature-gates":       setFeatureGates,
}

// set adapts a typed setter; the type is configs.EtcdArgs' kind's.
func set[T any](f func(*embed.Config, T)) argSetter {
	return func(cfg *embed.Config, value any) error {
		v, ok := value.(T)
		if !ok {
			return fmt.Errorf("internal error: value %v is a %T", value, value)
		}

		f(cfg, v)

		return nil
	}
}

// applyExtraArgs sets cluster.etcd.extraArgs on an embed config, see
// ValidateExtraArgs.
func applyExtraArgs(cfg *embed.Config, args configs.Args) error {
	var errs []error

	// Sorted, so feature-gates and an experimental gate apply in a fixed
	// order; a list's values (repeated feature gates) in theirs.
	for _, key := range args.Names() {
		if err := applyArg(cfg, key, args[key]); err != nil {
			errs = append(errs, err)
		}
	}

	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("etcd extraArgs: %w", err)
	}

	return nil
}

// ValidateExtraArgs checks cluster.etcd.extraArgs as Start will apply them
// (configs.ParseEtcdArgValues, then the embed config). Keys talosbox owns
// fail with ErrArgOwned, unknown ones with ErrArgUnknown. Every bad key is
// reported, in key order.
func ValidateExtraArgs(args configs.Args) error {
	return applyExtraArgs(embed.NewConfig(), args)
}

func applyArg(cfg *embed.Config, key string, value configs.ArgValue) error {
	args, err := configs.ParseEtcdArgValues(key, value)
	if err != nil {
		return err
	}

	for i, arg := range args {
		set, ok := extraArgs[arg.Flag]
		if !ok {
			return fmt.Errorf("%q: %w", key, ErrArgUnknown)
		}

		if err := set(cfg, arg.Value); err != nil {
			return fmt.Errorf("%s=%q: %w", key, value.Values()[i], err)
		}
	}

	return nil
}

// setFeatureGates applies gates on top of the ones set so far.
func setFeatureGates(cfg *embed.Config, value any) error {
	gates, ok := cfg.ServerFeatureGate.(featuregate.MutableFeatureGate)
	if !ok {
		return errors.New("feature gates are not settable")
	}

	m, ok := value.(map[string]bool)
	if !ok {
		return fmt.Errorf("internal error: feature gates are a %T", value)
	}

	return gates.SetFromMap(m)
}
