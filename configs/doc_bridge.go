package configs

// BridgeConfig is Talos's BridgeConfig: a software switch joining links.
// It is machine.network.interfaces[name].bridge (its members are enslaved
// to it); networkd reads hardwareAddr, up and multicast from the
// document. The spanning tree protocol is refused: networkd cannot turn
// it on yet.
type BridgeConfig struct {
	Name         string            `yaml:"name"`
	HardwareAddr string            `yaml:"hardwareAddr,omitempty"`
	Links        []string          `yaml:"links,omitempty"`
	STP          *BridgeSTPConfig  `yaml:"stp,omitempty"`
	VLAN         *BridgeVLANConfig `yaml:"vlan,omitempty"`

	Up        *bool         `yaml:"up,omitempty"`
	MTU       uint32        `yaml:"mtu,omitempty"`
	Addresses []LinkAddress `yaml:"addresses,omitempty"`
	Routes    []LinkRoute   `yaml:"routes,omitempty"`
	Multicast *bool         `yaml:"multicast,omitempty"`
}

// BridgeSTPConfig is a bridge's spanning tree protocol.
type BridgeSTPConfig struct {
	Enabled *bool `yaml:"enabled,omitempty"`
}

// BridgeVLANConfig is a bridge's VLAN filtering.
type BridgeVLANConfig struct {
	Filtering *bool `yaml:"filtering,omitempty"`
}

// Kind implements Document.
func (*BridgeConfig) Kind() string { return "BridgeConfig" }

// DocumentName implements NamedDocument.
func (b *BridgeConfig) DocumentName() string { return b.Name }

// LinkSettings implements LinkDocument.
func (b *BridgeConfig) LinkSettings() LinkSettings {
	return LinkSettings{Up: b.Up, MTU: b.MTU, Addresses: b.Addresses, Routes: b.Routes, Multicast: b.Multicast}
}

// LinkHardwareAddr implements HardwareAddrDocument.
func (b *BridgeConfig) LinkHardwareAddr() string { return b.HardwareAddr }

func (b *BridgeConfig) check(v *validator, path string) {
	v.linkName(path, b.Name)
	v.hardwareAddr(path+".hardwareAddr", b.HardwareAddr)

	if b.STP != nil && b.STP.Enabled != nil && *b.STP.Enabled {
		v.errorf(path+".stp.enabled", "talosbox does not implement the spanning tree protocol on bridges yet: "+
			"remove stp.enabled (the bridge then forwards without STP, as with enabled: false)")
	}

	v.linkSettings(path, b.LinkSettings())
	v.linkClaims(path, b)
}

func (b *BridgeConfig) fold(f *folding) {
	if b.Name == "" {
		return // refused by check: there is no link to fold into
	}

	if f.linkKindConflict(b.Name, "bridge") {
		return
	}

	dev := f.deviceTarget(b.Name)
	p := indexPath("machine.network.interfaces", dev) + ".bridge"

	br := &Bridge{Interfaces: b.Links}
	if b.VLAN != nil && b.VLAN.Filtering != nil {
		br.VLAN = &BridgeVLAN{FilteringEnabled: *b.VLAN.Filtering}
	}

	f.network().Interfaces[dev].Bridge = br
	f.alias(p, "")
	f.alias(p+".interfaces", "links")
	f.alias(p+".vlan", "vlan")
	f.foldLink(linkTarget{dev: dev, vlan: -1}, b.LinkSettings())
}
