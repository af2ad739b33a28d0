package network

import (
	"net/netip"
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
)

// HostnameSpecSpec is the wanted hostname.
type HostnameSpecSpec struct {
	Hostname   string      `yaml:"hostname" json:"hostname"`
	Domainname string      `yaml:"domainname,omitempty" json:"domainname,omitempty"`
	Layer      ConfigLayer `yaml:"layer" json:"layer"`
}

func (s HostnameSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// FQDN is hostname.domainname, or the hostname alone.
func (s HostnameSpecSpec) FQDN() string {
	if s.Domainname == "" {
		return s.Hostname
	}

	return s.Hostname + "." + s.Domainname
}

// HostnameSpec is a HostnameSpecs resource.
type HostnameSpec = bus.Typed[HostnameSpecSpec]

// HostnameStatusSpec is the hostname in effect.
type HostnameStatusSpec struct {
	Hostname   string `yaml:"hostname" json:"hostname"`
	Domainname string `yaml:"domainname,omitempty" json:"domainname,omitempty"`
}

// FQDN is hostname.domainname, or the hostname alone.
func (s HostnameStatusSpec) FQDN() string {
	return HostnameSpecSpec{Hostname: s.Hostname, Domainname: s.Domainname}.FQDN()
}

// HostnameStatus is a HostnameStatuses resource.
type HostnameStatus = bus.Typed[HostnameStatusSpec]

// ResolverSpecSpec lists DNS servers and search domains.
type ResolverSpecSpec struct {
	DNSServers    []netip.Addr `yaml:"dnsServers" json:"dnsServers"`
	SearchDomains []string     `yaml:"searchDomains,omitempty" json:"searchDomains,omitempty"`
	Layer         ConfigLayer  `yaml:"layer" json:"layer"`
}

// DeepCopy copies the lists.
func (s ResolverSpecSpec) DeepCopy() ResolverSpecSpec {
	s.DNSServers, s.SearchDomains = slices.Clone(s.DNSServers), slices.Clone(s.SearchDomains)
	return s
}

func (s ResolverSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// ResolverSpec is a ResolverSpecs resource.
type ResolverSpec = bus.Typed[ResolverSpecSpec]

// ResolverStatusSpec is the resolver configuration in effect.
type ResolverStatusSpec struct {
	DNSServers    []netip.Addr `yaml:"dnsServers" json:"dnsServers"`
	SearchDomains []string     `yaml:"searchDomains,omitempty" json:"searchDomains,omitempty"`
}

// DeepCopy copies the lists.
func (s ResolverStatusSpec) DeepCopy() ResolverStatusSpec {
	s.DNSServers, s.SearchDomains = slices.Clone(s.DNSServers), slices.Clone(s.SearchDomains)
	return s
}

// ResolverStatus is a ResolverStatuses resource.
type ResolverStatus = bus.Typed[ResolverStatusSpec]

// TimeServerSpecSpec lists NTP servers.
type TimeServerSpecSpec struct {
	NTPServers []string    `yaml:"timeServers" json:"timeServers"`
	Layer      ConfigLayer `yaml:"layer" json:"layer"`
}

// DeepCopy copies the list.
func (s TimeServerSpecSpec) DeepCopy() TimeServerSpecSpec {
	s.NTPServers = slices.Clone(s.NTPServers)
	return s
}

func (s TimeServerSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// TimeServerSpec is a TimeServerSpecs resource.
type TimeServerSpec = bus.Typed[TimeServerSpecSpec]

// TimeServerStatusSpec is the NTP servers in effect (timed reads them).
type TimeServerStatusSpec struct {
	NTPServers []string `yaml:"timeServers" json:"timeServers"`
}

// DeepCopy copies the list.
func (s TimeServerStatusSpec) DeepCopy() TimeServerStatusSpec {
	s.NTPServers = slices.Clone(s.NTPServers)
	return s
}

// TimeServerStatus is a TimeServerStatuses resource.
type TimeServerStatus = bus.Typed[TimeServerStatusSpec]

// Operator names.
const (
	OperatorDHCP4 = "dhcp4"
	OperatorDHCP6 = "dhcp6"
	// OperatorVIP keeps a shared IP on one control-plane node at a time.
	OperatorVIP = "vip"
)

// VIPOperatorSpec is the shared IP a vip operator campaigns for.
type VIPOperatorSpec struct {
	IP netip.Addr `yaml:"ip" json:"ip"`
	// GratuitousARP announces the new owner to the segment (layer 2).
	GratuitousARP bool `yaml:"gratuitousARP" json:"gratuitousARP"`
}

// OperatorSpecSpec asks for an operator (a DHCP client, a VIP keeper) to
// run on a link. Its ID is "<operator>/<link>".
type OperatorSpecSpec struct {
	Operator  string `yaml:"operator" json:"operator"`
	LinkName  string `yaml:"linkName" json:"linkName"`
	RequireUp bool   `yaml:"requireUp" json:"requireUp"`
	// RouteMetric is the metric of the routes the operator publishes.
	RouteMetric uint32 `yaml:"routeMetric,omitempty" json:"routeMetric,omitempty"`
	// SkipHostnameRequest: the config names the host, so DHCP must not.
	SkipHostnameRequest bool   `yaml:"skipHostnameRequest,omitempty" json:"skipHostnameRequest,omitempty"`
	DUIDv6              string `yaml:"duidv6,omitempty" json:"duidv6,omitempty"`
	// VIP is set for the vip operator.
	VIP   VIPOperatorSpec `yaml:"vip,omitempty" json:"vip,omitempty"`
	Layer ConfigLayer     `yaml:"layer" json:"layer"`
}

func (s OperatorSpecSpec) SpecLayer() ConfigLayer { return s.Layer }

// ID is "<operator>/<link>".
func (s OperatorSpecSpec) ID() string { return s.Operator + "/" + s.LinkName }

// OperatorSpec is an OperatorSpecs resource.
type OperatorSpec = bus.Typed[OperatorSpecSpec]

// NodeAddressSpec lists node addresses: "default" holds the one address the
// node is known by, "current" every global address it has.
type NodeAddressSpec struct {
	Addresses []netip.Prefix `yaml:"addresses" json:"addresses"`
}

// DeepCopy copies the list.
func (s NodeAddressSpec) DeepCopy() NodeAddressSpec {
	s.Addresses = slices.Clone(s.Addresses)
	return s
}

// NodeAddress is a NodeAddresses resource.
type NodeAddress = bus.Typed[NodeAddressSpec]

// NetworkStatusSpec is the readiness of the network, as Talos reports it,
// plus the problems networkd could not resolve by itself.
type NetworkStatusSpec struct {
	AddressReady      bool `yaml:"addressReady" json:"addressReady"`
	ConnectivityReady bool `yaml:"connectivityReady" json:"connectivityReady"`
	HostnameReady     bool `yaml:"hostnameReady" json:"hostnameReady"`
	EtcFilesReady     bool `yaml:"etcFilesReady" json:"etcFilesReady"`
	// Issues are the ApplyIssues, "<id>: <message>", sorted.
	Issues []string `yaml:"issues,omitempty" json:"issues,omitempty"`
}

// DeepCopy copies the list.
func (s NetworkStatusSpec) DeepCopy() NetworkStatusSpec {
	s.Issues = slices.Clone(s.Issues)
	return s
}

// NetworkStatus is a NetworkStatuses resource.
type NetworkStatus = bus.Typed[NetworkStatusSpec]

// EtcFileStatusSpec is a rendered /etc file (hosts, resolv.conf).
type EtcFileStatusSpec struct {
	Path string `yaml:"path" json:"path"`
	// Contents is what was written, so a reader needs no file access.
	Contents string `yaml:"contents" json:"contents"`
}

// EtcFileStatus is an EtcFileStatuses resource.
type EtcFileStatus = bus.Typed[EtcFileStatusSpec]

// Issue states.
const (
	// IssuePending: waiting for something outside networkd (a link to
	// appear, an operator to be wired in).
	IssuePending = "pending"
	// IssueError: the kernel refused, or the specs contradict each other.
	IssueError = "error"
)

// ApplyIssueSpec is one thing networkd could not apply. Its ID is
// "<kind>/<spec id>", e.g. "address/eth0/10.0.0.2/24".
type ApplyIssueSpec struct {
	State   string `yaml:"state" json:"state"`
	Message string `yaml:"message" json:"message"`
}

// ApplyIssue is an ApplyIssues resource.
type ApplyIssue = bus.Typed[ApplyIssueSpec]
