package configs

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Shared checks for single values. Each returns an error whose message is
// ready to be shown after the value's path.

func checkCIDR(s string) error {
	if _, err := netip.ParsePrefix(s); err != nil {
		return fmt.Errorf("invalid CIDR %q", s)
	}

	return nil
}

// ParseAddressPrefix reads an interface address of machine.network
// (addresses, the legacy cidr, a VLAN's): "192.168.1.10/24", or a bare
// address, which Talos takes as a host prefix (/32 for IPv4, /128 for
// IPv6). Validation and the node's address configuration both read
// addresses with it, so what one accepts the other applies.
func ParseAddressPrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
		}

		return p, nil
	}

	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("invalid address %q: want an IP address, with its prefix length (192.168.1.10/24)", s)
	}

	return netip.PrefixFrom(a, a.BitLen()), nil
}

func checkAddressPrefix(s string) error {
	_, err := ParseAddressPrefix(s)

	return err
}

// checkSubnetFilter accepts a CIDR optionally negated with "!", the form of
// kubelet.nodeIP.validSubnets and etcd subnets.
func checkSubnetFilter(s string) error {
	if err := checkCIDR(strings.TrimPrefix(s, "!")); err != nil {
		return fmt.Errorf("invalid subnet %q", s)
	}

	return nil
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)

	return err == nil
}

func checkIP(what, s string) error {
	if !isIP(s) {
		return fmt.Errorf("invalid %s %q", what, s)
	}

	return nil
}

// checkURL requires an absolute URL with a host and one of the schemes.
func checkURL(what, s string, schemes ...string) error {
	if !hasScheme(s) {
		want := make([]string, len(schemes))
		for i, sc := range schemes {
			want[i] = sc + "://"
		}

		return fmt.Errorf("invalid %s %q: has no scheme: want %s", what, s, strings.Join(want, " or "))
	}

	if fix := bracketIPv6(s); fix != "" {
		return fmt.Errorf("invalid %s %q: an IPv6 address in a URL goes in brackets: %s", what, s, fix)
	}

	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("invalid %s %q: %w", what, s, unwrapURLError(err))
	}

	if !slices.Contains(schemes, u.Scheme) {
		return fmt.Errorf("invalid %s %q: scheme must be %s", what, s, strings.Join(schemes, " or "))
	}

	// "tcp://:5000" has a host of ":5000" but no host name: Go would dial
	// the node itself.
	if u.Hostname() == "" {
		return fmt.Errorf("invalid %s %q: host is missing", what, s)
	}

	if p := u.Port(); p != "" {
		if err := checkPortString(p); err != nil {
			return fmt.Errorf("invalid %s %q: %w", what, s, err)
		}
	}

	return nil
}

// hasScheme reports whether s starts with "scheme://". Without it Go's URL
// parser either fails with a puzzling message ("first path segment in URL
// cannot contain colon" for 10.5.0.2:6443) or takes the host for the scheme
// (cp.example.com:6443), so a missing scheme is reported as such first.
func hasScheme(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")

	return ok && scheme != "" && !strings.ContainsAny(scheme, "/?#@[]")
}

// unwrapURLError drops url.Error's repetition of the URL, which the caller's
// message already shows.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}

	return err
}

func checkPortString(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("invalid port %q", p)
	}

	return nil
}

func checkHostPort(what, s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("invalid %s %q: expected host:port", what, s)
	}

	if host == "" {
		return fmt.Errorf("invalid %s %q: host is missing", what, s)
	}

	if err := checkPortString(port); err != nil {
		return fmt.Errorf("invalid %s %q: %w", what, s, err)
	}

	return nil
}

var dnsLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`) })

// isDNSName accepts RFC 1123 host names, with an optional trailing dot.
func isDNSName(s string) bool {
	return dnsNameProblem(s) == ""
}

// dnsNameProblem says what keeps s from being an RFC 1123 host name (with
// an optional trailing dot), naming the limit it breaks; "" when it is one.
func dnsNameProblem(s string) string {
	s = strings.TrimSuffix(s, ".")

	switch {
	case s == "":
		return "it is empty"
	case len(s) > 253:
		return fmt.Sprintf("it is %d characters long, the limit is 253", len(s))
	}

	for label := range strings.SplitSeq(s, ".") {
		switch {
		case label == "":
			return "it has an empty label (two dots in a row, or a leading dot)"
		case len(label) > 63:
			return fmt.Sprintf("its label %q is %d characters long, the limit is 63", truncate(label, 20), len(label))
		case !dnsLabel().MatchString(label):
			return fmt.Sprintf("its label %q may only hold letters, digits and '-', and must not start or end with '-'", label)
		}
	}

	return ""
}

// checkSAN accepts what can go into a certificate's subject alternative
// names: an IP or a DNS name, possibly a wildcard.
func checkSAN(s string) error {
	if isIP(s) || isDNSName(strings.TrimPrefix(s, "*.")) {
		return nil
	}

	return fmt.Errorf("invalid certificate SAN %q: must be an IP address or a DNS name", s)
}

// checkBase64Key requires base64 of one of the given lengths in bytes.
func checkBase64Key(what, s string, sizes ...int) error {
	return checkDecodedKey(what, s, base64.StdEncoding.DecodeString, sizes...)
}

// checkDecodedKey requires s to decode to one of the given lengths in
// bytes.
func checkDecodedKey(what, s string, decode func(string) ([]byte, error), sizes ...int) error {
	b, err := decode(s)
	if err != nil || !slices.Contains(sizes, len(b)) {
		want := make([]string, len(sizes))
		for i, n := range sizes {
			want[i] = strconv.Itoa(n)
		}

		return fmt.Errorf("invalid %s: must be base64 of %s bytes", what, strings.Join(want, ", "))
	}

	return nil
}

// DecodeBase64 decodes base64 in either alphabet, padded or not: the
// standard one, or the URL-safe one ('-' and '_') that Talos before 1.14
// wrote cluster.id in. Whatever reads cluster.id or cluster.secret as
// bytes decodes them with it, so every config Talos ever generated works.
func DecodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")

	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}

	b, err := enc.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("invalid base64: %w", err)
	}

	return b, nil
}

// tokenPattern is the shape of both the Kubernetes bootstrap token and the
// trustd token.
var tokenPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`) })

// imageRef follows the distribution reference grammar closely enough to
// catch typos without a dependency: [host[:port]/]path[:tag][@digest].
var imageRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^` +
		`(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
		`(?::[\w][\w.-]{0,127})?` +
		`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)
})

func checkImage(s string) error {
	if imageRef().MatchString(s) {
		return nil
	}

	if hasScheme(s) {
		return fmt.Errorf("invalid image reference %q: an image is named without a scheme (registry/path:tag)", s)
	}

	// The registry host may have capitals (DNS is case-blind); the path
	// may not.
	host, rest, found := strings.Cut(s, "/")
	if found && (strings.ContainsAny(host, ".:") || host == "localhost") {
		if lower := host + "/" + strings.ToLower(rest); lower != s && imageRef().MatchString(lower) {
			return fmt.Errorf("invalid image reference %q: image paths are lowercase (did you mean %q?)", s, lower)
		}
	} else if lower := strings.ToLower(s); lower != s && imageRef().MatchString(lower) {
		return fmt.Errorf("invalid image reference %q: image paths are lowercase (did you mean %q?)", s, lower)
	}

	if strings.ContainsAny(s, " \t\n") {
		return fmt.Errorf("invalid image reference %q: it contains whitespace", s)
	}

	return fmt.Errorf("invalid image reference %q: want [registry[:port]/]path[:tag][@digest]", s)
}

func checkAbsPath(what, s string) error {
	if !strings.HasPrefix(s, "/") {
		return fmt.Errorf("%s %q must be an absolute path", what, s)
	}

	return nil
}

func checkPort(what string, p int) error {
	if p < 0 || p > 65535 {
		return fmt.Errorf("invalid %s %d: must be between 1 and 65535", what, p)
	}

	return nil
}

// bracketIPv6 returns s with the IPv6 address of its host in brackets when
// it was written without them (https://fd00::1:6443), "" otherwise.
func bracketIPv6(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return ""
	}

	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}

	if strings.Contains(authority, "[") || strings.Count(authority, ":") < 2 {
		return ""
	}

	// fd00::1:6443 is also an address; in a URL the last group is far
	// more likely a port, so that reading goes first.
	last := strings.LastIndex(authority, ":")
	if port := authority[last+1:]; port != "" && strings.Trim(port, "0123456789") == "" && checkPortString(port) == nil {
		if a, err := netip.ParseAddr(authority[:last]); err == nil && a.Is6() {
			return scheme + "://[" + authority[:last] + "]" + authority[last:] + path
		}
	}

	if a, err := netip.ParseAddr(authority); err == nil && a.Is6() {
		return scheme + "://[" + authority + "]" + path
	}

	return ""
}
