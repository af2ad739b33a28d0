package configs

import (
	"net"
	"strings"
)

// BondConfig is Talos's BondConfig: a bond of links. It is
// machine.network.interfaces[name].bond; networkd reads hardwareAddr, up
// and multicast from the document. Options networkd does not pass to the
// bonding driver yet are refused (v1alpha1's bond only warns of them).
type BondConfig struct {
	Name            string   `yaml:"name"`
	HardwareAddr    string   `yaml:"hardwareAddr,omitempty"`
	Links           []string `yaml:"links,omitempty"`
	BondMode        string   `yaml:"bondMode,omitempty"`
	MIIMon          *uint32  `yaml:"miimon,omitempty"`
	UpDelay         *uint32  `yaml:"updelay,omitempty"`
	DownDelay       *uint32  `yaml:"downdelay,omitempty"`
	UseCarrier      *bool    `yaml:"useCarrier,omitempty"`
	XmitHashPolicy  string   `yaml:"xmitHashPolicy,omitempty"`
	ARPInterval     *uint32  `yaml:"arpInterval,omitempty"`
	ARPIPTargets    []string `yaml:"arpIpTargets,omitempty"`
	NSIP6Targets    []string `yaml:"nsIp6Targets,omitempty"`
	ARPValidate     string   `yaml:"arpValidate,omitempty"`
	ARPAllTargets   string   `yaml:"arpAllTargets,omitempty"`
	LACPRate        string   `yaml:"lacpRate,omitempty"`
	FailOverMAC     string   `yaml:"failOverMac,omitempty"`
	ADSelect        string   `yaml:"adSelect,omitempty"`
	ADActorSysPrio  *uint16  `yaml:"adActorSysPrio,omitempty"`
	ADUserPortKey   *uint16  `yaml:"adUserPortKey,omitempty"`
	ADLACPActive    string   `yaml:"adLACPActive,omitempty"`
	Primary         *string  `yaml:"primary,omitempty"`
	PrimaryReselect string   `yaml:"primaryReselect,omitempty"`
	ResendIGMP      *uint32  `yaml:"resendIGMP,omitempty"`
	MinLinks        *uint32  `yaml:"minLinks,omitempty"`
	LPInterval      *uint32  `yaml:"lpInterval,omitempty"`
	PacketsPerSlave *uint32  `yaml:"packetsPerSlave,omitempty"`
	NumPeerNotif    *uint8   `yaml:"numPeerNotif,omitempty"`
	TLBDynamicLB    *uint8   `yaml:"tlbLogicalLb,omitempty"`
	AllSlavesActive *uint8   `yaml:"allSlavesActive,omitempty"`
	PeerNotifyDelay *uint32  `yaml:"peerNotifDelay,omitempty"`
	MissedMax       *uint8   `yaml:"missedMax,omitempty"`

	Up        *bool         `yaml:"up,omitempty"`
	MTU       uint32        `yaml:"mtu,omitempty"`
	Addresses []LinkAddress `yaml:"addresses,omitempty"`
	Routes    []LinkRoute   `yaml:"routes,omitempty"`
	Multicast *bool         `yaml:"multicast,omitempty"`
}

// Kind implements Document.
func (*BondConfig) Kind() string { return "BondConfig" }

// DocumentName implements NamedDocument.
func (b *BondConfig) DocumentName() string { return b.Name }

// LinkSettings implements LinkDocument.
func (b *BondConfig) LinkSettings() LinkSettings {
	return LinkSettings{Up: b.Up, MTU: b.MTU, Addresses: b.Addresses, Routes: b.Routes, Multicast: b.Multicast}
}

// LinkHardwareAddr implements HardwareAddrDocument.
func (b *BondConfig) LinkHardwareAddr() string { return b.HardwareAddr }

func (b *BondConfig) check(v *validator, path string) {
	v.linkName(path, b.Name)

	if len(b.Links) == 0 {
		v.errorf(path+".links", "at least one link must be specified: the bond's members")
	}

	if b.BondMode == "" {
		v.errorf(path+".bondMode", "bond mode must be specified (%s)", strings.Join(bondModes, ", "))
	} else if strings.EqualFold(b.BondMode, "802.3ad") {
		for _, o := range []struct {
			name string
			set  bool
		}{{"miimon", b.MIIMon != nil}, {"updelay", b.UpDelay != nil}, {"downdelay", b.DownDelay != nil}} {
			if !o.set {
				v.warnf(path+"."+o.name, "%s was not specified for 802.3ad bond", o.name)
			}
		}
	}

	v.hardwareAddr(path+".hardwareAddr", b.HardwareAddr)

	// What networkd does not pass to the bonding driver: refused, as the
	// link would come up with the driver's defaults instead.
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"useCarrier", b.UseCarrier != nil}, {"arpInterval", b.ARPInterval != nil}, {"arpIpTargets", len(b.ARPIPTargets) > 0},
		{"nsIp6Targets", len(b.NSIP6Targets) > 0}, {"arpValidate", b.ARPValidate != ""}, {"arpAllTargets", b.ARPAllTargets != ""},
		{"failOverMac", b.FailOverMAC != ""}, {"adSelect", b.ADSelect != ""}, {"adActorSysPrio", b.ADActorSysPrio != nil},
		{"adUserPortKey", b.ADUserPortKey != nil}, {"adLACPActive", b.ADLACPActive != ""}, {"primary", b.Primary != nil},
		{"primaryReselect", b.PrimaryReselect != ""}, {"resendIGMP", b.ResendIGMP != nil}, {"lpInterval", b.LPInterval != nil},
		{"packetsPerSlave", b.PacketsPerSlave != nil}, {"numPeerNotif", b.NumPeerNotif != nil}, {"tlbLogicalLb", b.TLBDynamicLB != nil},
		{"allSlavesActive", b.AllSlavesActive != nil}, {"peerNotifDelay", b.PeerNotifyDelay != nil}, {"missedMax", b.MissedMax != nil},
	} {
		if o.set {
			v.errorf(path+"."+o.name, "talosbox does not implement the bond option %s yet (networkd sets bondMode, xmitHashPolicy, lacpRate, "+
				"miimon, updelay, downdelay and minLinks): remove it, or the bond would run with the driver's default", o.name)
		}
	}

	v.linkSettings(path, b.LinkSettings())
	v.linkClaims(path, b)
}

// hardwareAddr checks a link document's MAC address.
func (v *validator) hardwareAddr(path, mac string) {
	if mac == "" {
		return
	}

	hw, err := net.ParseMAC(mac)

	switch {
	case err != nil || len(hw) != 6:
		v.errorf(path, "invalid MAC address %q: want six colon-separated hex bytes (2e:3c:4d:5e:6f:70)", mac)
	case hw[0]&1 == 1:
		v.errorf(path, "MAC address %s is a multicast address: a link's address must be unicast (an even first byte)", mac)
	}
}

// fold: the options networkd applies are machine.network's bond
// options; the refused ones are left out, so v1alpha1's warning about
// them is not said twice.
func (b *BondConfig) fold(f *folding) {
	if b.Name == "" {
		return // refused by check: there is no link to fold into
	}

	if len(b.Links) == 0 {
		return // refused by check: a bond without members is none
	}

	if f.linkKindConflict(b.Name, "bond") {
		return
	}

	dev := f.deviceTarget(b.Name)
	p := indexPath("machine.network.interfaces", dev) + ".bond"

	bond := &Bond{Interfaces: b.Links, Mode: strings.ToLower(b.BondMode), HashPolicy: strings.ToLower(b.XmitHashPolicy), LACPRate: strings.ToLower(b.LACPRate)}

	for _, o := range []struct {
		src *uint32
		dst *uint32
	}{{b.MIIMon, &bond.MIIMon}, {b.UpDelay, &bond.UpDelay}, {b.DownDelay, &bond.DownDelay}, {b.MinLinks, &bond.MinLinks}} {
		if o.src != nil {
			*o.dst = *o.src
		}
	}

	f.network().Interfaces[dev].Bond = bond

	for _, a := range []struct{ effective, written string }{
		{"", ""}, {".interfaces", "links"}, {".mode", "bondMode"}, {".xmitHashPolicy", "xmitHashPolicy"}, {".lacpRate", "lacpRate"},
		{".miimon", "miimon"}, {".updelay", "updelay"}, {".downdelay", "downdelay"}, {".minLinks", "minLinks"},
	} {
		f.alias(p+a.effective, a.written)
	}

	f.foldLink(linkTarget{dev: dev, vlan: -1}, b.LinkSettings())
}

// HardwareAddrDocument is a link document that may set the link's MAC
// address (BondConfig, BridgeConfig, DummyLinkConfig): networkd reads it
// from the document.
type HardwareAddrDocument interface {
	LinkDocument
	LinkHardwareAddr() string
}
