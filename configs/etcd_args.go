package configs

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:generate go run ./internal/etcdgates

// EtcdGate is one etcd feature gate.
type EtcdGate struct {
	Default       bool
	LockToDefault bool
	// Alpha gates are the ones AllAlpha sets.
	Alpha bool
}

// EtcdArgKind is how an etcd flag's value is read.
type EtcdArgKind int

// The kinds of etcd flag values.
const (
	EtcdUint EtcdArgKind = iota
	EtcdInt
	EtcdDuration
	EtcdBool
	EtcdString
	EtcdEnum
	EtcdList
	EtcdURLs
	EtcdGateList
)

// EtcdArg describes one etcd flag cluster.etcd.extraArgs may set.
type EtcdArg struct {
	Kind EtcdArgKind
	// Bits bounds an integer (32, 64); 0 is 64.
	Bits int
	// Enum lists the values of an EtcdEnum.
	Enum []string
}

// EtcdOwnedArgs are the etcd flags talosbox derives from the node
// (identity, URLs, TLS, cluster membership, data and log placement).
// Letting extraArgs override them would break joining, leaving or
// restoring.
var EtcdOwnedArgs = []string{
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
	// Recovery is a restore's job; the flag would force a new cluster on
	// every restart.
	"force-new-cluster",
	// Logs go to the node's log.
	"logger", "log-outputs", "enable-log-rotation", "log-rotation-config-json",
}

var logLevels = []string{"debug", "info", "warn", "error", "panic", "fatal"}

// EtcdArgs are the etcd flags that apply to talosbox's in-process etcd,
// by flag name; internal/etcd sets each on the server's config.
var EtcdArgs = map[string]EtcdArg{
	"snapshot-count":           {Kind: EtcdUint},
	"snapshot-catchup-entries": {Kind: EtcdUint},
	"max-snapshots":            {Kind: EtcdUint},
	"max-wals":                 {Kind: EtcdUint},
	"heartbeat-interval":       {Kind: EtcdUint},
	"election-timeout":         {Kind: EtcdUint},
	"quota-backend-bytes":      {Kind: EtcdInt},
	"max-request-bytes":        {Kind: EtcdUint},
	"max-txn-ops":              {Kind: EtcdUint},
	"max-concurrent-streams":   {Kind: EtcdUint, Bits: 32},
	"max-learners":             {Kind: EtcdInt},

	"auto-compaction-mode":      {Kind: EtcdEnum, Enum: []string{"periodic", "revision"}},
	"auto-compaction-retention": {Kind: EtcdString},
	"compaction-batch-limit":    {Kind: EtcdInt},
	"compaction-sleep-interval": {Kind: EtcdDuration},

	"backend-batch-interval":               {Kind: EtcdDuration},
	"backend-batch-limit":                  {Kind: EtcdInt},
	"backend-bbolt-freelist-type":          {Kind: EtcdEnum, Enum: []string{"map", "array"}},
	"bootstrap-defrag-threshold-megabytes": {Kind: EtcdUint},

	"grpc-keepalive-min-time":        {Kind: EtcdDuration},
	"grpc-keepalive-interval":        {Kind: EtcdDuration},
	"grpc-keepalive-timeout":         {Kind: EtcdDuration},
	"corrupt-check-time":             {Kind: EtcdDuration},
	"compact-hash-check-time":        {Kind: EtcdDuration},
	"watch-progress-notify-interval": {Kind: EtcdDuration},
	"warning-apply-duration":         {Kind: EtcdDuration},
	"warning-unary-request-duration": {Kind: EtcdDuration},
	"downgrade-check-time":           {Kind: EtcdDuration},

	"pre-vote":                      {Kind: EtcdBool},
	"strict-reconfig-check":         {Kind: EtcdBool},
	"initial-election-tick-advance": {Kind: EtcdBool},
	"enable-grpc-gateway":           {Kind: EtcdBool},
	"enable-pprof":                  {Kind: EtcdBool},
	"memory-mlock":                  {Kind: EtcdBool},
	"unsafe-no-fsync":               {Kind: EtcdBool},
	"socket-reuse-port":             {Kind: EtcdBool},
	"socket-reuse-address":          {Kind: EtcdBool},

	"metrics":         {Kind: EtcdEnum, Enum: []string{"basic", "extensive"}},
	"log-level":       {Kind: EtcdEnum, Enum: logLevels},
	"log-format":      {Kind: EtcdEnum, Enum: []string{"json", "console"}},
	"tls-min-version": {Kind: EtcdEnum, Enum: []string{"TLS1.2", "TLS1.3"}},
	"tls-max-version": {Kind: EtcdEnum, Enum: []string{"TLS1.2", "TLS1.3"}},
	"cipher-suites":   {Kind: EtcdList},

	// Prometheus scraping: Talos users commonly set http://0.0.0.0:2381.
	"listen-metrics-urls": {Kind: EtcdURLs},
	"feature-gates":       {Kind: EtcdGateList},
}

// EtcdExperimentalRenames are etcd 3.5 flags that 3.6 renamed and 3.7
// removed; configs written for older Talos versions still carry them.
var EtcdExperimentalRenames = map[string]string{
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

// EtcdExperimentalGates are etcd 3.5 boolean flags that became feature
// gates, with the gate each sets.
var EtcdExperimentalGates = map[string]string{
	"experimental-initial-corrupt-check":             "InitialCorruptCheck",
	"experimental-compact-hash-check-enabled":        "CompactHashCheck",
	"experimental-enable-lease-checkpoint":           "LeaseCheckpoint",
	"experimental-stop-grpc-service-on-defrag":       "StopGRPCServiceOnDefrag",
	"experimental-txn-mode-write-with-shared-buffer": "TxnModeWriteWithSharedBuffer",
}

// ErrEtcdArgOwned reports an extraArgs key talosbox sets itself.
var ErrEtcdArgOwned = errors.New("managed by talosbox, not settable in extraArgs")

// ErrEtcdArgUnknown reports an extraArgs key that is not a supported etcd
// flag.
var ErrEtcdArgUnknown = errors.New("not an etcd flag this member supports")

// EtcdArgValue is one cluster.etcd.extraArgs entry, read: the flag it sets
// (experimental names resolved) and its value, typed by the flag's kind.
type EtcdArgValue struct {
	Flag string
	// Value is a uint64, int64, time.Duration, bool, string, []string,
	// []url.URL or, for feature-gates, map[string]bool.
	Value any
}

// ParseEtcdArg reads one cluster.etcd.extraArgs entry: the rule both
// validation and the etcd server that applies it use. Errors wrap
// ErrEtcdArgOwned or ErrEtcdArgUnknown, or say what value was expected.
func ParseEtcdArg(key, value string) (EtcdArgValue, error) {
	name := strings.TrimLeft(key, "-")

	if slices.Contains(EtcdOwnedArgs, name) {
		return EtcdArgValue{}, fmt.Errorf("%q: %w", key, ErrEtcdArgOwned)
	}

	if renamed, ok := EtcdExperimentalRenames[name]; ok {
		name = renamed
	}

	if gate, ok := EtcdExperimentalGates[name]; ok {
		on, err := strconv.ParseBool(value)
		if err != nil {
			return EtcdArgValue{}, fmt.Errorf("%s=%q: want true or false", key, value)
		}

		return EtcdArgValue{Flag: "feature-gates", Value: map[string]bool{gate: on}}, nil
	}

	arg, ok := EtcdArgs[name]
	if !ok {
		return EtcdArgValue{}, fmt.Errorf("%q: %w", key, ErrEtcdArgUnknown)
	}

	v, err := arg.parse(value)
	if err != nil {
		return EtcdArgValue{}, fmt.Errorf("%s=%q: %w", key, value, err)
	}

	return EtcdArgValue{Flag: name, Value: v}, nil
}

// ParseEtcdArgValues reads every value of one cluster.etcd.extraArgs
// entry, in order (ParseEtcdArg each). A list repeats the flag, which
// etcd adds up for --feature-gates alone: any other flag given more than
// once keeps only its last value, so it is refused. An empty list sets
// nothing, as Talos gives etcd no flag for it; its key must still be one
// the member lets extraArgs set.
func ParseEtcdArgValues(key string, v ArgValue) ([]EtcdArgValue, error) {
	values := v.Values()
	if len(values) == 0 {
		if _, err := ParseEtcdArg(key, ""); errors.Is(err, ErrEtcdArgOwned) || errors.Is(err, ErrEtcdArgUnknown) {
			return nil, err
		}

		return nil, nil
	}

	out := make([]EtcdArgValue, 0, len(values))

	for _, s := range values {
		arg, err := ParseEtcdArg(key, s)
		if err != nil {
			return nil, err
		}

		if len(values) > 1 && strings.TrimLeft(key, "-") != "feature-gates" {
			return nil, fmt.Errorf("%q is given %d times (a list), but etcd keeps only the last value of --%s: write one value (only feature-gates takes repeats)",
				key, len(values), arg.Flag)
		}

		out = append(out, arg)
	}

	return out, nil
}

func (a EtcdArg) parse(v string) (any, error) {
	bits := a.Bits
	if bits == 0 {
		bits = 64
	}

	switch a.Kind {
	case EtcdUint:
		n, err := strconv.ParseUint(v, 10, bits)
		if err != nil {
			return nil, errors.New("want an unsigned integer")
		}

		return n, nil
	case EtcdInt:
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return nil, errors.New("want an integer")
		}

		return n, nil
	case EtcdDuration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, errors.New(`want a duration such as "5s"`)
		}

		return d, nil
	case EtcdBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, errors.New("want true or false")
		}

		return b, nil
	case EtcdEnum:
		if !slices.Contains(a.Enum, v) {
			return nil, fmt.Errorf("want one of %s", strings.Join(a.Enum, ", "))
		}

		return v, nil
	case EtcdList:
		return splitList(v), nil
	case EtcdURLs:
		return parseMetricsURLs(v)
	case EtcdGateList:
		return parseEtcdFeatureGates(v)
	default:
		return v, nil
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

func parseMetricsURLs(v string) ([]url.URL, error) {
	var urls []url.URL

	for _, s := range splitList(v) {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Port() == "" {
			return nil, fmt.Errorf("%q: want http(s)://host:port", s)
		}

		urls = append(urls, *u)
	}

	return urls, nil
}

// parseEtcdFeatureGates reads "Gate=true,Other=false" with the gates of the
// etcd server talosbox runs.
func parseEtcdFeatureGates(v string) (map[string]bool, error) {
	out := map[string]bool{}

	for _, kv := range splitList(v) {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want Gate=true or Gate=false", kv)
		}

		k = strings.TrimSpace(k)

		gate, known := EtcdFeatureGates[k]
		if !known {
			known := sortedKeys(EtcdFeatureGates)
			msg := fmt.Sprintf("unknown feature gate %q (known: %s)", k, strings.Join(known, ", "))

			return nil, errors.New(msg)
		}

		b, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%s=%q: want true or false", k, val)
		}

		if gate.LockToDefault && b != gate.Default {
			return nil, fmt.Errorf("feature gate %s is locked to %t", k, gate.Default)
		}

		out[k] = b
	}

	return out, nil
}

// etcdExtraArgs checks cluster.etcd.extraArgs as the etcd member will
// apply them, then what it checks of them all together when it starts.
func (v *validator) etcdExtraArgs(args Args) {
	if settings, errs := ApplyEtcdArgs(args); len(errs) == 0 {
		for _, err := range settings.Validate() {
			v.errorf("cluster.etcd.extraArgs", "%v: etcd would not start", err)
		}
	}

	for _, k := range args.Names() {
		if _, err := ParseEtcdArgValues(k, args[k]); err != nil {
			msg := err.Error()
			if errors.Is(err, ErrEtcdArgUnknown) {
				if s := suggest(strings.TrimLeft(k, "-"), sortedKeys(EtcdArgs)); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
			}

			v.errorf(keyPath("cluster.etcd.extraArgs", k), "%s", msg)
		}
	}
}
