package mgmt

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

// forcedEndpoint is cluster create's --endpoint, Talos's "use endpoint
// instead of provider defaults": the one address the client is given for
// both APIs (a load balancer, a DNS name, a shared IP, a forwarded host),
// where the provider would hand out its nodes' own addresses.
type forcedEndpoint struct {
	// Talos is the talosconfig's endpoint: host, or host:port.
	Talos string
	// Server is the kubeconfig's server: https://host:6443 unless the flag
	// was a URL.
	Server string
	// Host goes into the certificates' SANs, the OS API's and the API
	// server's, so both answer to it.
	Host string
}

// parseForcedEndpoint reads --endpoint: a host, host:port (the Talos API's
// port) or an https URL (the Kubernetes API's), IPv6 in brackets.
func parseForcedEndpoint(s string) (forcedEndpoint, error) {
	bad := func(why string) (forcedEndpoint, error) {
		return forcedEndpoint{}, fmt.Errorf("--endpoint %q: %s (want a host, host:port or https://host:port)", s, why)
	}

	if s == "" || strings.ContainsAny(s, " \t\n/") && !strings.Contains(s, "://") {
		return bad("not an address")
	}

	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return bad(err.Error())
		}

		if u.Scheme != "https" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
			return bad("the Kubernetes API is served over https at a host, with no path")
		}

		if err := checkPort(u.Port()); err != nil {
			return bad(err.Error())
		}

		return forcedEndpoint{Talos: bracket(u.Hostname()), Server: "https://" + u.Host, Host: u.Hostname()}, nil
	}

	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}

	if err := checkPort(port); err != nil {
		return bad(err.Error())
	}

	if _, err := netip.ParseAddr(host); err != nil && !validHostname(host) {
		return bad("neither an IP address nor a host name")
	}

	return forcedEndpoint{Talos: s, Server: "https://" + net.JoinHostPort(host, "6443"), Host: host}, nil
}

func checkPort(p string) error {
	if p == "" {
		return nil
	}

	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a port", p)
	}

	return nil
}

// bracket writes an IPv6 host as a talosconfig endpoint takes it.
func bracket(host string) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return "[" + host + "]"
	}

	return host
}

// validHostname: RFC 1123 labels, as a SAN and a resolver take them.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}

	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}

		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}

	return true
}

// pointKubeconfig makes every cluster of a kubeconfig name server, as
// Talos's cluster create does with --endpoint.
func pointKubeconfig(data []byte, server string) ([]byte, error) {
	k, err := kubernetes.ParseKubeconfig(data, "the node's kubeconfig")
	if err != nil {
		return nil, err
	}

	for _, c := range k.Clusters {
		c.Server = server
	}

	return kubernetes.MarshalKubeconfig(k)
}
