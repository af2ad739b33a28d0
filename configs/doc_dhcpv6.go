package configs

// DHCPv6Config is Talos's DHCPv6Config: a DHCPv6 client on a link.
// talosbox has no DHCPv6 client yet, so the document is refused (a
// node would come up without the addresses it asks for); it decodes, is
// checked by Talos's rules and patched like any other.
type DHCPv6Config struct {
	Name             string `yaml:"name"`
	RouteMetric      uint32 `yaml:"routeMetric,omitempty"`
	IgnoreHostname   *bool  `yaml:"ignoreHostname,omitempty"`
	ClientIdentifier string `yaml:"clientIdentifier,omitempty"`
	DUIDRaw          string `yaml:"duidRaw,omitempty"`
}

// Kind implements Document.
func (*DHCPv6Config) Kind() string { return "DHCPv6Config" }

// DocumentName implements NamedDocument.
func (d *DHCPv6Config) DocumentName() string { return d.Name }

func (d *DHCPv6Config) check(v *validator, path string) {
	v.linkName(path, d.Name)
	v.dhcpClientIdentifier(path, d.ClientIdentifier, d.DUIDRaw)
	v.errorf(path, "talosbox does not implement DHCPv6 yet (it has no DHCPv6 client): remove the document, "+
		"and give the link its IPv6 addresses in a LinkConfig")
}

// fold: nothing while the document is refused.
func (*DHCPv6Config) fold(*folding) {}
