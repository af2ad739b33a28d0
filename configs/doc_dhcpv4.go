package configs

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// DHCPv4Config is Talos's DHCPv4Config: a DHCPv4 client on a link. It is
// machine.network.interfaces[name].dhcp with its route metric; networkd
// reads ignoreHostname, ignoreRoutes and the client identifier from the
// document.
type DHCPv4Config struct {
	Name           string `yaml:"name"`
	RouteMetric    uint32 `yaml:"routeMetric,omitempty"`
	IgnoreHostname *bool  `yaml:"ignoreHostname,omitempty"`
	IgnoreRoutes   *bool  `yaml:"ignoreRoutes,omitempty"`
	// ClientIdentifier is what the client identifies itself with
	// (option 61): mac (the default), duid (duidRaw) or none.
	ClientIdentifier string `yaml:"clientIdentifier,omitempty"`
	// DUIDRaw is the DUID, colon-separated hex bytes.
	DUIDRaw string `yaml:"duidRaw,omitempty"`
}

// The DHCP client identifiers (Talos's nethelpers.ClientIdentifier).
const (
	ClientIdentifierNone = "none"
	ClientIdentifierMAC  = "mac"
	ClientIdentifierDUID = "duid"
)

// Kind implements Document.
func (*DHCPv4Config) Kind() string { return "DHCPv4Config" }

// DocumentName implements NamedDocument.
func (d *DHCPv4Config) DocumentName() string { return d.Name }

// Identifier is the client identifier, lower-case: mac when unset.
func (d *DHCPv4Config) Identifier() string {
	if d.ClientIdentifier == "" {
		return ClientIdentifierMAC
	}

	return strings.ToLower(d.ClientIdentifier)
}

// DUID is duidRaw as bytes (nil when unset or invalid).
func (d *DHCPv4Config) DUID() []byte {
	b, _ := ParseDUID(d.DUIDRaw) //nolint:errcheck // refused by check

	return b
}

func (d *DHCPv4Config) check(v *validator, path string) {
	v.linkName(path, d.Name)
	v.dhcpClientIdentifier(path, d.ClientIdentifier, d.DUIDRaw)
}

func (d *DHCPv4Config) fold(f *folding) {
	if d.Name == "" {
		return
	}

	lf := f.fields(f.linkTarget(d.Name))
	*lf.dhcp = true
	f.alias(lf.path+".dhcp", "")

	// machine.network's DHCP runs DHCPv4 unless told not to; a document
	// asks for it, so an interfaces entry's ipv4: false gives way (Talos
	// runs both clients).
	if o := *lf.opts; o != nil && o.IPv4 != nil && !*o.IPv4 {
		o.IPv4 = ptr(true)
		f.alias(lf.path+".dhcpOptions.ipv4", "")
	}

	if d.RouteMetric != 0 {
		if *lf.opts == nil {
			*lf.opts = &DHCPOptions{}
		}

		(*lf.opts).RouteMetric = d.RouteMetric
		f.alias(lf.path+".dhcpOptions.routeMetric", "routeMetric")
	}
}

// dhcpClientIdentifier checks a DHCP document's client identifier as
// Talos does: duidRaw goes with duid, and only with it.
func (v *validator) dhcpClientIdentifier(path, id, duid string) {
	switch strings.ToLower(id) {
	case "", ClientIdentifierMAC, ClientIdentifierNone, ClientIdentifierDUID:
	default:
		v.errorf(path+".clientIdentifier", "invalid client identifier %q: want mac, duid or none", id)
	}

	isDUID := strings.EqualFold(id, ClientIdentifierDUID)

	switch {
	case duid != "" && !isDUID:
		v.errorf(path+".duidRaw", "duidRaw can only be set if clientIdentifier is 'duid'")
	case duid == "" && isDUID:
		v.errorf(path+".duidRaw", "duidRaw must be set if clientIdentifier is 'duid'")
	case duid != "":
		if _, err := ParseDUID(duid); err != nil {
			v.errorf(path+".duidRaw", "%v", err)
		}
	}
}

// ParseDUID reads a DUID written as hex bytes, colon-separated or not
// (Talos's nethelpers.HardwareAddr): at least a 2-byte type and one byte
// more.
func ParseDUID(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.ReplaceAll(s, ":", ""))

	switch {
	case err != nil:
		return nil, fmt.Errorf("invalid DUID %q: want hex bytes, colon-separated (00:01:00:01:...)", s)
	case len(b) < 3 || len(b) > 130:
		return nil, fmt.Errorf("invalid DUID %q: a DUID has 3 to 130 bytes, this one %d", s, len(b))
	}

	return b, nil
}
