package configs

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The member's defaults (etcd's and internal/etcd's).
const (
	etcdDefaultTickMs     = 100
	etcdDefaultElectionMs = 1000
	etcdMaxElectionMs     = 50000
)

// CommandLine is the entry as the flag it amounts to
// ("--snapshot-count=10000"; a 3.5 name under its 3.6 one, a 3.5 gate as
// --feature-gates); raw is the value as written.
func (a EtcdArgValue) CommandLine(raw string) string {
	if gates, ok := a.Value.(map[string]bool); ok {
		kv := make([]string, 0, len(gates))
		for _, g := range slices.Sorted(maps.Keys(gates)) {
			kv = append(kv, fmt.Sprintf("%s=%t", g, gates[g]))
		}

		raw = strings.Join(kv, ",")
	}

	return "--" + a.Flag + "=" + raw
}

// EtcdSettings are what cluster.etcd.extraArgs make of the member's
// configuration.
type EtcdSettings struct {
	// Flags are the flags in the order the member applies them (the
	// extraArgs' keys sorted), as Flag returns them.
	Flags []string
	// values by flag name, as configs.ParseEtcdArg typed them (the last
	// one set), and the feature gates set.
	values map[string]any
	gates  map[string]bool
}

// ApplyEtcdArgs reads every extraArgs entry and applies them in key
// order, a list's values in order, as the member does. errs are the
// entries' problems, by key.
func ApplyEtcdArgs(extraArgs Args) (s EtcdSettings, errs map[string]error) {
	s = EtcdSettings{values: map[string]any{}, gates: map[string]bool{}}

	for _, k := range extraArgs.Names() {
		args, err := ParseEtcdArgValues(k, extraArgs[k])
		if err != nil {
			if errs == nil {
				errs = map[string]error{}
			}

			errs[k] = err

			continue
		}

		values := extraArgs[k].Values()

		for i, arg := range args {
			s.Flags = append(s.Flags, arg.CommandLine(values[i]))

			if gates, ok := arg.Value.(map[string]bool); ok {
				setGates(s.gates, gates)

				continue
			}

			s.values[arg.Flag] = arg.Value
		}
	}

	return s, errs
}

// Validate is what the member checks when it starts (embed.Config.Validate,
// and the listeners' cipher suites) of what extraArgs set: each problem
// stops the member, so each is a config the node cannot run. The tests of
// internal/render/etcdargs hold it to etcd itself.
func (s EtcdSettings) Validate() []error {
	var errs []error

	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	num := func(k string, def uint64) uint64 {
		if n, ok := s.values[k].(uint64); ok {
			return n
		}

		return def
	}

	tick, election := num("heartbeat-interval", etcdDefaultTickMs), num("election-timeout", etcdDefaultElectionMs)

	switch {
	case tick == 0:
		bad("--heartbeat-interval must be >0 (set to 0ms)")
	case election == 0:
		bad("--election-timeout must be >0 (set to 0ms)")
	case tick > etcdMaxElectionMs || 5*tick > election:
		bad("--election-timeout[%dms] should be at least as 5 times as --heartbeat-interval[%dms]", election, tick)
	case election > etcdMaxElectionMs:
		bad("--election-timeout[%dms] is too long, and should be set less than %dms", election, etcdMaxElectionMs)
	}

	if d, ok := s.values["compact-hash-check-time"].(time.Duration); ok && d <= 0 {
		bad("--compact-hash-check-time must be >0 (set to %v)", d)
	}

	if s.gates["LeaseCheckpointPersist"] && !s.gates["LeaseCheckpoint"] {
		bad("enabling feature gate LeaseCheckpointPersist requires enabling feature gate LeaseCheckpoint")
	}

	minS, _ := s.values["tls-min-version"].(string)
	maxS, _ := s.values["tls-max-version"].(string)
	tlsVersion := map[string]uint16{"": 0, "TLS1.2": tls.VersionTLS12, "TLS1.3": tls.VersionTLS13}
	minV, maxV := tlsVersion[minS], tlsVersion[maxS]
	ciphers, _ := s.values["cipher-suites"].([]string)

	if maxV != 0 && minV > maxV {
		bad("min version (%s) is greater than max version (%s)", minS, maxS)
	}

	if minV == tls.VersionTLS13 && len(ciphers) > 0 {
		bad("cipher suites cannot be configured when only TLS1.3 is enabled")
	}

	for _, c := range ciphers {
		if !knownCipherSuite(c) {
			bad("unexpected TLS cipher suite %q", c)
		}
	}

	urls, _ := s.values["listen-metrics-urls"].([]url.URL)
	for _, u := range urls {
		host, _, err := net.SplitHostPort(u.Host)
		if err != nil {
			bad("listen-metrics-urls %q: %w", u.String(), err)
		} else if host != "localhost" && net.ParseIP(host) == nil {
			bad("expected IP in URL for binding (%s)", u.String())
		}
	}

	return errs
}

// setGates applies one feature-gates value as etcd's featuregate does:
// AllAlpha sets the alpha gates that are not set yet.
func setGates(gates, set map[string]bool) {
	for _, k := range slices.Sorted(maps.Keys(set)) {
		gates[k] = set[k]

		if k == "AllAlpha" {
			for _, g := range sortedKeys(EtcdFeatureGates) {
				if _, ok := gates[g]; !ok && EtcdFeatureGates[g].Alpha {
					gates[g] = set[k]
				}
			}
		}
	}
}

func knownCipherSuite(s string) bool {
	for _, c := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if c.Name == s {
			return true
		}
	}

	return s == "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" || s == "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"
}
