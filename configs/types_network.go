package configs

import (
	"net/netip"
	"slices"
	"time"
)

// NetworkConfig is machine.network.
type NetworkConfig struct {
	Hostname            string      `yaml:"hostname,omitempty"`
	Interfaces          []Device    `yaml:"interfaces,omitempty"`
	Nameservers         []string    `yaml:"nameservers,omitempty"`
	SearchDomains       []string    `yaml:"searchDomains,omitempty"`
	ExtraHostEntries    []ExtraHost `yaml:"extraHostEntries,omitempty"`
	KubeSpan            *KubeSpan   `yaml:"kubespan,omitempty"`
	DisableSearchDomain bool        `yaml:"disableSearchDomain,omitempty"`
}

// ExtraHost is an /etc/hosts entry.
type ExtraHost struct {
	IP      string   `yaml:"ip,omitempty"`
	Aliases []string `yaml:"aliases,omitempty"`
}

// KubeSpan is machine.network.kubespan, the KubeSpan WireGuard mesh (the
// KubeSpanConfig document stands for it).
type KubeSpan struct {
	Enabled                     bool             `yaml:"enabled,omitempty"`
	AdvertiseKubernetesNetworks bool             `yaml:"advertiseKubernetesNetworks,omitempty"`
	AllowDownPeerBypass         bool             `yaml:"allowDownPeerBypass,omitempty"`
	HarvestExtraEndpoints       *bool            `yaml:"harvestExtraEndpoints,omitempty"`
	MTU                         uint32           `yaml:"mtu,omitempty"`
	Filters                     *KubeSpanFilters `yaml:"filters,omitempty"`
}

// KubeSpanFilters limits what KubeSpan advertises.
type KubeSpanFilters struct {
	Endpoints                 []string `yaml:"endpoints,omitempty"`
	ExcludeAdvertisedNetworks []string `yaml:"excludeAdvertisedNetworks,omitempty"`
}

// Device is one link (physical, bond, bridge, wireguard, dummy) and its
// addressing. The link is named by Interface or matched by DeviceSelector.
type Device struct {
	Interface      string          `yaml:"interface,omitempty"`
	DeviceSelector *DeviceSelector `yaml:"deviceSelector,omitempty"`
	Addresses      []string        `yaml:"addresses,omitempty"`
	// CIDR is the single address of Talos before addresses existed; as in
	// Talos, a link has one or the other.
	CIDR        string           `yaml:"cidr,omitempty"`
	Routes      []Route          `yaml:"routes,omitempty"`
	Bond        *Bond            `yaml:"bond,omitempty"`
	Bridge      *Bridge          `yaml:"bridge,omitempty"`
	BridgePort  *BridgePort      `yaml:"bridgePort,omitempty"`
	VLANs       []VLAN           `yaml:"vlans,omitempty"`
	MTU         uint32           `yaml:"mtu,omitempty"`
	DHCP        bool             `yaml:"dhcp,omitempty"`
	Ignore      bool             `yaml:"ignore,omitempty"`
	Dummy       bool             `yaml:"dummy,omitempty"`
	DHCPOptions *DHCPOptions     `yaml:"dhcpOptions,omitempty"`
	WireGuard   *WireGuardConfig `yaml:"wireguard,omitempty"`
	VIP         *VIPConfig       `yaml:"vip,omitempty"`
}

// DeviceSelector matches a link by hardware properties; every set field
// must match.
type DeviceSelector struct {
	BusPath       string `yaml:"busPath,omitempty"`
	HardwareAddr  string `yaml:"hardwareAddr,omitempty"`
	PermanentAddr string `yaml:"permanentAddr,omitempty"`
	PCIID         string `yaml:"pciID,omitempty"`
	Driver        string `yaml:"driver,omitempty"`
	Physical      *bool  `yaml:"physical,omitempty"`
}

// Route is a static route. An empty Network is the default route.
type Route struct {
	Network string `yaml:"network,omitempty"`
	Gateway string `yaml:"gateway,omitempty"`
	Source  string `yaml:"source,omitempty"`
	Metric  uint32 `yaml:"metric,omitempty"`
	MTU     uint32 `yaml:"mtu,omitempty"`
}

// Bond aggregates links. Field names and units follow the kernel bonding
// driver (delays and intervals in milliseconds).
type Bond struct {
	Interfaces      []string         `yaml:"interfaces,omitempty"`
	DeviceSelectors []DeviceSelector `yaml:"deviceSelectors,omitempty"`
	ARPIPTarget     []string         `yaml:"arpIPTarget,omitempty"`
	Mode            string           `yaml:"mode,omitempty"`
	HashPolicy      string           `yaml:"xmitHashPolicy,omitempty"`
	LACPRate        string           `yaml:"lacpRate,omitempty"`
	ADActorSystem   string           `yaml:"adActorSystem,omitempty"`
	ARPValidate     string           `yaml:"arpValidate,omitempty"`
	ARPAllTargets   string           `yaml:"arpAllTargets,omitempty"`
	Primary         string           `yaml:"primary,omitempty"`
	PrimaryReselect string           `yaml:"primaryReselect,omitempty"`
	FailOverMac     string           `yaml:"failOverMac,omitempty"`
	ADSelect        string           `yaml:"adSelect,omitempty"`
	MIIMon          uint32           `yaml:"miimon,omitempty"`
	UpDelay         uint32           `yaml:"updelay,omitempty"`
	DownDelay       uint32           `yaml:"downdelay,omitempty"`
	ARPInterval     uint32           `yaml:"arpInterval,omitempty"`
	ResendIGMP      uint32           `yaml:"resendIgmp,omitempty"`
	MinLinks        uint32           `yaml:"minLinks,omitempty"`
	LPInterval      uint32           `yaml:"lpInterval,omitempty"`
	PacketsPerSlave uint32           `yaml:"packetsPerSlave,omitempty"`
	NumPeerNotif    uint8            `yaml:"numPeerNotif,omitempty"`
	TLBDynamicLB    uint8            `yaml:"tlbDynamicLb,omitempty"`
	AllSlavesActive uint8            `yaml:"allSlavesActive,omitempty"`
	UseCarrier      *bool            `yaml:"useCarrier,omitempty"`
	ADActorSysPrio  uint16           `yaml:"adActorSysPrio,omitempty"`
	ADUserPortKey   uint16           `yaml:"adUserPortKey,omitempty"`
	PeerNotifyDelay uint32           `yaml:"peerNotifyDelay,omitempty"`
}

// Bridge joins links into a software switch.
type Bridge struct {
	Interfaces []string    `yaml:"interfaces,omitempty"`
	STP        *BridgeSTP  `yaml:"stp,omitempty"`
	VLAN       *BridgeVLAN `yaml:"vlan,omitempty"`
}

// BridgeSTP toggles the spanning tree protocol.
type BridgeSTP struct {
	Enabled bool `yaml:"enabled,omitempty"`
}

// BridgeVLAN toggles VLAN filtering on the bridge.
type BridgeVLAN struct {
	FilteringEnabled bool `yaml:"vlanFiltering,omitempty"`
}

// BridgePort enslaves the link to a bridge declared elsewhere.
type BridgePort struct {
	Master string `yaml:"master,omitempty"`
}

// VLAN is a tagged sub-link of its parent Device.
type VLAN struct {
	Addresses   []string     `yaml:"addresses,omitempty"`
	CIDR        string       `yaml:"cidr,omitempty"`
	Routes      []Route      `yaml:"routes,omitempty"`
	DHCP        bool         `yaml:"dhcp,omitempty"`
	ID          uint16       `yaml:"vlanId,omitempty"`
	MTU         uint32       `yaml:"mtu,omitempty"`
	VIP         *VIPConfig   `yaml:"vip,omitempty"`
	DHCPOptions *DHCPOptions `yaml:"dhcpOptions,omitempty"`
}

// DHCPOptions tunes the DHCP client of a link.
type DHCPOptions struct {
	RouteMetric uint32 `yaml:"routeMetric,omitempty"`
	IPv4        *bool  `yaml:"ipv4,omitempty"`
	IPv6        *bool  `yaml:"ipv6,omitempty"`
	DUIDv6      string `yaml:"duidv6,omitempty"`
}

// WireGuardConfig makes the link a WireGuard tunnel.
type WireGuardConfig struct {
	// PrivateKey is base64 of 32 bytes, as printed by `wg genkey`.
	PrivateKey   string          `yaml:"privateKey,omitempty"`
	ListenPort   int             `yaml:"listenPort,omitempty"`
	FirewallMark int             `yaml:"firewallMark,omitempty"`
	Peers        []WireGuardPeer `yaml:"peers,omitempty"`
}

// WireGuardPeer is one remote end of the tunnel.
type WireGuardPeer struct {
	PublicKey string `yaml:"publicKey,omitempty"`
	// Endpoint is host:port.
	Endpoint                    string        `yaml:"endpoint,omitempty"`
	PersistentKeepaliveInterval time.Duration `yaml:"persistentKeepaliveInterval,omitempty"`
	AllowedIPs                  []string      `yaml:"allowedIPs,omitempty"`
}

// VIPConfig is the shared IP control-plane nodes elect an owner for.
type VIPConfig struct {
	IP           string     `yaml:"ip,omitempty"`
	EquinixMetal *VIPAPIKey `yaml:"equinixMetal,omitempty"`
	HCloud       *VIPAPIKey `yaml:"hcloud,omitempty"`
}

// VIPAPIKey lets the VIP owner move the IP through a cloud API.
type VIPAPIKey struct {
	APIToken string `yaml:"apiToken,omitempty"`
}

// SharedIPs are the VIPs the config's links campaign for (links and their
// VLANs), in config order: an address a node holds only while it wins
// the election, which what is made from the node's addresses (the API
// server's certificate) must neither gain nor lose with it.
func (c *Config) SharedIPs() []netip.Addr {
	if c == nil {
		return nil
	}

	var out []netip.Addr

	add := func(v *VIPConfig) {
		if v == nil {
			return
		}

		if a, err := netip.ParseAddr(v.IP); err == nil && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}

	var devs []Device
	if c.Machine != nil && c.Machine.Network != nil {
		devs = c.Machine.Network.Interfaces
	}

	for _, d := range devs {
		add(d.VIP)

		for _, v := range d.VLANs {
			add(v.VIP)
		}
	}

	// Layer2VIPConfig documents are not folded into the interfaces.
	for _, d := range DocumentsOf[*Layer2VIPConfig](c) {
		add(&VIPConfig{IP: d.Name})
	}

	return out
}
