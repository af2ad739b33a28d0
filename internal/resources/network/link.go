package network

import (
	"net/netip"
	"slices"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name, as Talos has it.
const (
	LinkSpecType   = "LinkSpecs.net.talos.dev"
	LinkStatusType = "LinkStatuses.net.talos.dev"
)

// Link kinds networkd can create. An empty kind is a link that must
// already exist (a NIC, a veth, the loopback).
const (
	KindPhysical  = ""
	KindDummy     = "dummy"
	KindBond      = "bond"
	KindVLAN      = "vlan"
	KindWireGuard = "wireguard"
	KindBridge    = "bridge"
)

// LinkSpecSpec is the wanted state of one link.
type LinkSpecSpec struct {
	Name string `yaml:"name" json:"name"`
	// Logical links are created (and removed) by networkd.
	Logical bool   `yaml:"logical" json:"logical"`
	Up      bool   `yaml:"up" json:"up"`
	MTU     uint32 `yaml:"mtu,omitempty" json:"mtu,omitempty"`
	Kind    string `yaml:"kind,omitempty" json:"kind,omitempty"`
	// ParentName is the link a VLAN is stacked on.
	ParentName string `yaml:"parentName,omitempty" json:"parentName,omitempty"`
	// BondMaster names the bond this link is enslaved to.
	BondMaster string `yaml:"bondMaster,omitempty" json:"bondMaster,omitempty"`
	// BridgeMaster names the bridge this link is a port of.
	BridgeMaster string `yaml:"bridgeMaster,omitempty" json:"bridgeMaster,omitempty"`
	// Multicast, when set, turns the link's multicast flag on or off.
	Multicast *bool `yaml:"multicast,omitempty" json:"multicast,omitempty"`
	// HardwareAddr, when set, is the link's MAC address.
	HardwareAddr string        `yaml:"hardwareAddr,omitempty" json:"hardwareAddr,omitempty"`
	VLAN         VLANSpec      `yaml:"vlan,omitempty" json:"vlan,omitempty"`
	Bond         BondSpec      `yaml:"bond,omitempty" json:"bond,omitempty"`
	Bridge       BridgeSpec    `yaml:"bridge,omitempty" json:"bridge,omitempty"`
	WireGuard    WireGuardSpec `yaml:"wireguard,omitempty" json:"wireguard,omitempty"`
	Layer        ConfigLayer   `yaml:"layer" json:"layer"`
}

// VLANSpec configures a VLAN link.
type VLANSpec struct {
	ID uint16 `yaml:"vlanID,omitempty" json:"vlanID,omitempty"`
	// Protocol is 802.1q (also when empty) or 802.1ad.
	Protocol string `yaml:"protocol,omitempty" json:"protocol,omitempty"`
}

// BridgeSpec configures a bridge.
type BridgeSpec struct {
	VLANFiltering bool `yaml:"vlanFiltering,omitempty" json:"vlanFiltering,omitempty"`
}

// BondSpec is the subset of the bonding driver's settings networkd sets.
type BondSpec struct {
	Mode       string `yaml:"mode,omitempty" json:"mode,omitempty"`
	HashPolicy string `yaml:"hashPolicy,omitempty" json:"hashPolicy,omitempty"`
	LACPRate   string `yaml:"lacpRate,omitempty" json:"lacpRate,omitempty"`
	MIIMon     uint32 `yaml:"miimon,omitempty" json:"miimon,omitempty"`
	UpDelay    uint32 `yaml:"updelay,omitempty" json:"updelay,omitempty"`
	DownDelay  uint32 `yaml:"downdelay,omitempty" json:"downdelay,omitempty"`
	MinLinks   uint32 `yaml:"minLinks,omitempty" json:"minLinks,omitempty"`
}

// WireGuardSpec configures a WireGuard link.
type WireGuardSpec struct {
	PrivateKey   string          `yaml:"privateKey,omitempty" json:"privateKey,omitempty"`
	ListenPort   int             `yaml:"listenPort,omitempty" json:"listenPort,omitempty"`
	FirewallMark int             `yaml:"firewallMark,omitempty" json:"firewallMark,omitempty"`
	Peers        []WireGuardPeer `yaml:"peers,omitempty" json:"peers,omitempty"`
}

// WireGuardPeer is one peer of a WireGuard link.
type WireGuardPeer struct {
	PublicKey           string         `yaml:"publicKey" json:"publicKey"`
	PresharedKey        string         `yaml:"presharedKey,omitempty" json:"presharedKey,omitempty"`
	Endpoint            string         `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
	PersistentKeepalive time.Duration  `yaml:"persistentKeepalive,omitempty" json:"persistentKeepalive,omitempty"`
	AllowedIPs          []netip.Prefix `yaml:"allowedIPs,omitempty" json:"allowedIPs,omitempty"`
}

// DeepCopy copies the peer list and the multicast flag.
func (s LinkSpecSpec) DeepCopy() LinkSpecSpec {
	if s.Multicast != nil {
		m := *s.Multicast
		s.Multicast = &m
	}

	s.WireGuard.Peers = slices.Clone(s.WireGuard.Peers)
	for i := range s.WireGuard.Peers {
		s.WireGuard.Peers[i].AllowedIPs = slices.Clone(s.WireGuard.Peers[i].AllowedIPs)
	}

	return s
}

func (s LinkSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// LinkSpec is a LinkSpecs resource.
type LinkSpec = bus.Typed[LinkSpecSpec]

// LinkStatusSpec is a link as the kernel reports it.
type LinkStatusSpec struct {
	Index int `yaml:"index" json:"index"`
	// Type is the link layer: ether, loopback, none, ...
	Type string `yaml:"type" json:"type"`
	// Kind is the rtnetlink kind: veth, bridge, bond, vlan, dummy, ...
	// (empty for a physical NIC).
	Kind             string `yaml:"kind,omitempty" json:"kind,omitempty"`
	Driver           string `yaml:"driver,omitempty" json:"driver,omitempty"`
	HardwareAddr     string `yaml:"hardwareAddr,omitempty" json:"hardwareAddr,omitempty"`
	MTU              int    `yaml:"mtu" json:"mtu"`
	Up               bool   `yaml:"up" json:"up"`
	LinkState        bool   `yaml:"linkState" json:"linkState"`
	OperationalState string `yaml:"operationalState" json:"operationalState"`
	MasterIndex      int    `yaml:"masterIndex,omitempty" json:"masterIndex,omitempty"`
	ParentIndex      int    `yaml:"parentIndex,omitempty" json:"parentIndex,omitempty"`
	Alias            string `yaml:"alias,omitempty" json:"alias,omitempty"`
	// Managed is set on links networkd created.
	Managed bool `yaml:"managed,omitempty" json:"managed,omitempty"`
}

// LinkStatus is a LinkStatuses resource.
type LinkStatus = bus.Typed[LinkStatusSpec]
