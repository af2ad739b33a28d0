package configs

// DummyLinkConfig is Talos's DummyLinkConfig: a dummy link (a link with
// no device behind it, for addresses the node answers on). It is
// machine.network.interfaces[name].dummy; networkd reads hardwareAddr,
// up and multicast from the document.
type DummyLinkConfig struct {
	Name         string `yaml:"name"`
	HardwareAddr string `yaml:"hardwareAddr,omitempty"`

	Up        *bool         `yaml:"up,omitempty"`
	MTU       uint32        `yaml:"mtu,omitempty"`
	Addresses []LinkAddress `yaml:"addresses,omitempty"`
	Routes    []LinkRoute   `yaml:"routes,omitempty"`
	Multicast *bool         `yaml:"multicast,omitempty"`
}

// Kind implements Document.
func (*DummyLinkConfig) Kind() string { return "DummyLinkConfig" }

// DocumentName implements NamedDocument.
func (d *DummyLinkConfig) DocumentName() string { return d.Name }

// LinkSettings implements LinkDocument.
func (d *DummyLinkConfig) LinkSettings() LinkSettings {
	return LinkSettings{Up: d.Up, MTU: d.MTU, Addresses: d.Addresses, Routes: d.Routes, Multicast: d.Multicast}
}

// LinkHardwareAddr implements HardwareAddrDocument.
func (d *DummyLinkConfig) LinkHardwareAddr() string { return d.HardwareAddr }

func (d *DummyLinkConfig) check(v *validator, path string) {
	v.linkName(path, d.Name)
	v.hardwareAddr(path+".hardwareAddr", d.HardwareAddr)
	v.linkSettings(path, d.LinkSettings())
	v.linkClaims(path, d)
}

func (d *DummyLinkConfig) fold(f *folding) {
	if d.Name == "" {
		return // refused by check: there is no link to fold into
	}

	if f.linkKindConflict(d.Name, "dummy") {
		return
	}

	dev := f.deviceTarget(d.Name)
	f.network().Interfaces[dev].Dummy = true
	f.alias(indexPath("machine.network.interfaces", dev)+".dummy", "")
	f.foldLink(linkTarget{dev: dev, vlan: -1}, d.LinkSettings())
}
