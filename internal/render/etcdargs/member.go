package etcdargs

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/talosbox/talosbox/configs"
)

// The member's defaults (etcd's and internal/etcd's).
const (
	ClientPort        = 2379
	PeerPort          = 2380
	defaultTickMs     = 100
	defaultElectionMs = 1000
	maxElectionMs     = 50000
)

// Settings are what extraArgs make of the member's configuration.
type Settings struct {
	// Flags are the flags in the order the member applies them (the
	// extraArgs' keys sorted), as Flag returns them.
	Flags []string
	// values by flag name, as configs.ParseEtcdArg typed them (the last
	// one set), and the feature gates set.
	values map[string]any
	gates  map[string]bool
}

// Apply reads every extraArgs entry and applies them in key order, as the
// member does. errs are the entries' problems, by key.
func Apply(extraArgs map[string]string) (s Settings, errs map[string]error) {
	s = Settings{values: map[string]any{}, gates: map[string]bool{}}

	for _, k := range slices.Sorted(maps.Keys(extraArgs)) {
		arg, err := configs.ParseEtcdArg(k, extraArgs[k])
		if err != nil {
			if errs == nil {
				errs = map[string]error{}
			}

			errs[k] = err

			continue
		}

		s.Flags = append(s.Flags, flag(arg, extraArgs[k]))

		if gates, ok := arg.Value.(map[string]bool); ok {
			setGates(s.gates, gates)

			continue
		}

		s.values[arg.Flag] = arg.Value
	}

	return s, errs
}

// Validate is what the member checks when it starts (embed.Config.Validate,
// and the listeners' cipher suites) of what extraArgs set: each problem
// stops the member, so each is a config the node cannot run.
func (s Settings) Validate() []error {
	var errs []error

	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	num := func(k string, def uint64) uint64 {
		if n, ok := s.values[k].(uint64); ok {
			return n
		}

		return def
	}

	tick, election := num("heartbeat-interval", defaultTickMs), num("election-timeout", defaultElectionMs)

	switch {
	case tick == 0:
		bad("--heartbeat-interval must be >0 (set to 0ms)")
	case election == 0:
		bad("--election-timeout must be >0 (set to 0ms)")
	case tick > maxElectionMs || 5*tick > election:
		bad("--election-timeout[%dms] should be at least as 5 times as --heartbeat-interval[%dms]", election, tick)
	case election > maxElectionMs:
		bad("--election-timeout[%dms] is too long, and should be set less than %dms", election, maxElectionMs)
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

// etcdAlphaGates are the server's alpha gates, which AllAlpha sets.
var etcdAlphaGates = []string{
	"CompactHashCheck", "InitialCorruptCheck", "LeaseCheckpoint", "LeaseCheckpointPersist",
	"PriorityRequest", "SetMemberLocalAddr", "StopGRPCServiceOnDefrag",
}

// setGates applies one feature-gates value as etcd's featuregate does:
// AllAlpha sets the alpha gates that are not set yet.
func setGates(gates, set map[string]bool) {
	for _, k := range slices.Sorted(maps.Keys(set)) {
		gates[k] = set[k]

		if k == "AllAlpha" {
			for _, g := range etcdAlphaGates {
				if _, ok := gates[g]; !ok {
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

// Addresses are the member's addresses, as internal/etcd.SelectAddresses
// picks them from the node's.
type Addresses struct {
	Advertised, ListenPeer, ListenClient []netip.Addr
}

// Select picks the member's addresses from the node's; what the addresses
// cannot give (none matches a subnet list) is a note, since a real node's
// addresses differ. The subnets must pass CheckSubnet.
func Select(ips []netip.Addr, advertisedSubnets, listenSubnets []string) (a Addresses, notes []string) {
	advertised := filterAddrs(ips, advertisedSubnets)
	if len(advertisedSubnets) == 0 && len(advertised) > 0 {
		advertised = advertised[:1]
	}

	if len(advertised) == 0 {
		notes = append(notes, fmt.Sprintf("no address matches cluster.etcd.advertisedSubnets %v: the advertised URLs are left empty", advertisedSubnets))
	}

	a.Advertised = advertised

	unspecified, loopback := netip.IPv4Unspecified(), netip.MustParseAddr("127.0.0.1")

	for _, ip := range ips {
		if ip.Is6() && !ip.Is4In6() {
			unspecified, loopback = netip.IPv6Unspecified(), netip.IPv6Loopback()

			break
		}
	}

	if len(listenSubnets) == 0 {
		a.ListenPeer, a.ListenClient = []netip.Addr{unspecified}, []netip.Addr{unspecified}

		return a, notes
	}

	listen := filterAddrs(ips, listenSubnets)
	if len(listen) == 0 {
		notes = append(notes, fmt.Sprintf("no address matches cluster.etcd.listenSubnets %v: the member listens on loopback alone", listenSubnets))
	}

	a.ListenPeer, a.ListenClient = listen, append([]netip.Addr{loopback}, listen...)

	return a, notes
}

// filterAddrs keeps the addresses subnets select ("!" excludes); a subnet
// that does not parse selects nothing.
func filterAddrs(addrs []netip.Addr, subnets []string) []netip.Addr {
	var include, exclude []netip.Prefix

	for _, s := range subnets {
		p, err := parseSubnet(strings.TrimSpace(strings.TrimPrefix(s, "!")))
		if err != nil {
			continue
		}

		if strings.HasPrefix(s, "!") {
			exclude = append(exclude, p)
		} else {
			include = append(include, p)
		}
	}

	contains := func(ps []netip.Prefix, a netip.Addr) bool {
		return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
	}

	var out []netip.Addr

	for _, a := range addrs {
		a = a.Unmap()
		if contains(exclude, a) || (len(include) > 0 && !contains(include, a)) {
			continue
		}

		out = append(out, a)
	}

	return out
}

// CheckSubnet refuses a cluster.etcd.{advertised,listen}Subnets entry the
// member cannot parse: its address selection fails on it, whatever the
// node's addresses.
func CheckSubnet(s string) error {
	_, err := parseSubnet(strings.TrimSpace(strings.TrimPrefix(s, "!")))

	return err
}

// parseSubnet is internal/etcd's: a CIDR, or a single address (a VIP is
// often given so).
func parseSubnet(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("subnet %q: %w", s, err)
		}

		return p.Masked(), nil
	}

	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("subnet %q: not a CIDR or IP address", s)
	}

	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// URLs are https://addr:port, comma-separated, IPv6 bracketed.
func URLs(addrs []netip.Addr, port int) string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = "https://" + netip.AddrPortFrom(a.Unmap(), uint16(port)).String()
	}

	return strings.Join(out, ",")
}
