package generate

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/internal/constants"
)

// NormalizeEndpoint turns what a user passes as the cluster endpoint into
// the https URL with a port that configs need. A bare host ("cp.example.com",
// "10.0.0.1", "fd00::1") or host:port gets "https://" and, when missing, the
// API server port 6443. Other schemes, paths and queries are refused.
func NormalizeEndpoint(endpoint string) (string, error) {
	endpoint = strings.TrimSpace(endpoint)
	if endpoint == "" {
		return "", errors.New("cluster endpoint is required")
	}

	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "https://" + bracketBareIPv6(raw)
	}

	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid cluster endpoint %q: %w", endpoint, unwrap(err))
	}

	switch {
	case u.Scheme != "https":
		return "", fmt.Errorf("invalid cluster endpoint %q: the control plane endpoint URL should have scheme https://", endpoint)
	case u.Hostname() == "":
		return "", fmt.Errorf("invalid cluster endpoint %q: host is missing", endpoint)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("invalid cluster endpoint %q: only a scheme, host and port are allowed", endpoint)
	}

	port := u.Port()
	if port == "" {
		port = constants.DefaultAPIServerPort
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("invalid cluster endpoint %q: invalid port %q", endpoint, port)
	}

	return "https://" + net.JoinHostPort(u.Hostname(), port), nil
}

// bracketBareIPv6 adds the brackets a URL needs around an IPv6 address given
// without a port.
func bracketBareIPv6(host string) string {
	if ip := net.ParseIP(host); ip != nil && strings.Contains(host, ":") {
		return "[" + host + "]"
	}

	return host
}

func unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}

	return err
}

// endpointHost is the host of a normalized endpoint.
func endpointHost(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}

	return u.Hostname()
}

// ParseRegistryMirror splits a --registry-mirror value "host=url".
func ParseRegistryMirror(s string) (host, endpoint string, err error) {
	host, endpoint, ok := strings.Cut(s, "=")
	if !ok || host == "" || endpoint == "" {
		return "", "", fmt.Errorf("invalid registry mirror %q: expected host=url", s)
	}

	return host, endpoint, nil
}
