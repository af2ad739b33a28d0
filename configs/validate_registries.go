package configs

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

func (v *validator) registries(r *RegistriesConfig) {
	if r == nil {
		return
	}

	const p = "machine.registries"

	for _, host := range sortedKeys(r.Mirrors) {
		mp := keyPath(p+".mirrors", host)

		v.check(mp, checkRegistryHost(host))

		mirror := r.Mirrors[host]
		if len(mirror.Endpoints) == 0 {
			v.errorf(mp+".endpoints", "at least one mirror endpoint is required")
		}

		for i, ep := range mirror.Endpoints {
			if err := checkURL("mirror endpoint", ep, "http", "https"); err != nil {
				v.errorf(indexPath(mp+".endpoints", i), "%v", err)
			} else if u, _ := url.Parse(ep); !mirror.OverridePath && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v2") {
				v.warnf(indexPath(mp+".endpoints", i), "%s ends with /v2, which containerd adds itself (it would ask for /v2/v2/...): leave it out, or set overridePath: true if the mirror serves the API there", ep)
			}
		}
	}

	for _, host := range sortedKeys(r.Config) {
		cp := keyPath(p+".config", host)
		rc := r.Config[host]

		v.check(cp, checkRegistryHost(host))
		v.check(cp+".tls", CheckRegistryTLS(host, rc.TLS))

		if rc.TLS != nil {
			v.pemCertificate(cp+".tls.ca", rc.TLS.CA, false)

			if id := rc.TLS.ClientIdentity; id != nil {
				v.leafPair(cp+".tls.clientIdentity", id)
			}
		}

		if a := rc.Auth; a != nil && a.Password != "" && a.Username == "" {
			v.errorf(cp+".auth.username", "username is required with a password")
		}
	}
}

// checkRegistryHost checks a registries.mirrors or registries.config key:
// a registry's host with an optional port, as image references name it, or
// "*" for every registry.
func checkRegistryHost(host string) error {
	if host == "*" {
		return nil
	}

	if host == "" {
		return errors.New("registry host is required")
	}

	if hasScheme(host) || strings.ContainsAny(host, "/ ") {
		fix := host
		if _, rest, ok := strings.Cut(host, "://"); ok {
			fix = rest
		}

		fix, _, _ = strings.Cut(fix, "/")

		return fmt.Errorf("registry host %q must be a host name with an optional port, as image references name it (did you mean %q?)", host, fix)
	}

	h := host
	if hh, port, err := net.SplitHostPort(host); err == nil {
		if err := checkPortString(port); err != nil {
			return fmt.Errorf("registry host %q: %w", host, err)
		}

		h = hh
	}

	if !isIP(h) && !isDNSName(h) {
		return fmt.Errorf("registry host %q must be a host name with an optional port", host)
	}

	return nil
}

// CheckRegistryTLS is the rule for registries.config[host].tls, which the
// CRI's registry hosts tree (internal/cri) applies too: TLS settings for
// the wildcard host would apply to every registry, and a CA or a client
// certificate cannot be right for all of them.
func CheckRegistryTLS(host string, tls *RegistryTLS) error {
	if host != "*" || tls == nil || (len(tls.CA) == 0 && tls.ClientIdentity == nil && !tls.InsecureSkipVerify) {
		return nil
	}

	return errors.New(`TLS settings for the wildcard host "*" are not supported: give them for each registry's host`)
}
