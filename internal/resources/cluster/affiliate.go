package cluster

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
)

// Namespace and resource types, as Talos names them.
const (
	Namespace     = "cluster"
	AffiliateType = "Affiliates.cluster.talos.dev"
	MemberType    = "Members.cluster.talos.dev"
)

// AffiliateSpec is one node as it describes itself. Its ID is NodeID.
type AffiliateSpec struct {
	NodeID          string       `yaml:"nodeId" json:"nodeId"`
	Hostname        string       `yaml:"hostname" json:"hostname"`
	Nodename        string       `yaml:"nodename" json:"nodename"`
	MachineType     string       `yaml:"machineType" json:"machineType"`
	OperatingSystem string       `yaml:"operatingSystem" json:"operatingSystem"`
	Addresses       []netip.Addr `yaml:"addresses" json:"addresses"`
	// ControlPlane is set on control planes (Talos's affiliate field).
	// Records from earlier versions lack it.
	ControlPlane *ControlPlane `yaml:"controlPlane,omitempty" json:"controlPlane,omitempty"`
}

// ControlPlane is what a control plane's record adds: where its API
// server listens, which KubePrism on every node balances over.
type ControlPlane struct {
	APIServerPort int `yaml:"apiServerPort" json:"apiServerPort"`
}

// DeepCopy copies the addresses and the control-plane part.
func (s AffiliateSpec) DeepCopy() AffiliateSpec {
	s.Addresses = slices.Clone(s.Addresses)
	s.ControlPlane = cloneControlPlane(s.ControlPlane)

	return s
}

func cloneControlPlane(c *ControlPlane) *ControlPlane {
	if c == nil {
		return nil
	}

	cp := *c

	return &cp
}

// Equal says whether two records are the same, addresses in order.
func (s AffiliateSpec) Equal(o AffiliateSpec) bool {
	return s.NodeID == o.NodeID && s.Hostname == o.Hostname && s.Nodename == o.Nodename && s.MachineType == o.MachineType &&
		s.OperatingSystem == o.OperatingSystem && slices.Equal(s.Addresses, o.Addresses) &&
		(s.ControlPlane == nil) == (o.ControlPlane == nil) && (s.ControlPlane == nil || *s.ControlPlane == *o.ControlPlane)
}

// Affiliate is an Affiliates resource.
type Affiliate = bus.Typed[AffiliateSpec]

// MemberSpec is a cluster member, named by its node name (the ID).
type MemberSpec struct {
	NodeID          string        `yaml:"nodeId" json:"nodeId"`
	Addresses       []netip.Addr  `yaml:"addresses" json:"addresses"`
	Hostname        string        `yaml:"hostname" json:"hostname"`
	MachineType     string        `yaml:"machineType" json:"machineType"`
	OperatingSystem string        `yaml:"operatingSystem" json:"operatingSystem"`
	ControlPlane    *ControlPlane `yaml:"controlPlane,omitempty" json:"controlPlane,omitempty"`
}

// DeepCopy copies the addresses and the control-plane part.
func (s MemberSpec) DeepCopy() MemberSpec {
	s.Addresses = slices.Clone(s.Addresses)
	s.ControlPlane = cloneControlPlane(s.ControlPlane)

	return s
}

// Member is a Members resource.
type Member = bus.Typed[MemberSpec]

// Limits on a record: workers' records come over the network.
const (
	MaxAddresses = 32
	maxField     = 253
)

// What a record's fields may hold.
var (
	nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	namePattern   = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
	machineTypes  = []string{"controlplane", "init", "worker"}
)

// ValidateNodeID checks a node ID, which names a record's key.
func ValidateNodeID(id string) error {
	if !nodeIDPattern.MatchString(id) {
		return fmt.Errorf("affiliate: invalid node ID %q", id)
	}

	return nil
}

// Validate checks a record before it is stored or shown.
func (s AffiliateSpec) Validate() error {
	if err := ValidateNodeID(s.NodeID); err != nil {
		return err
	}

	switch {
	case !namePattern.MatchString(s.Hostname):
		return fmt.Errorf("affiliate %s: invalid hostname %q", s.NodeID, s.Hostname)
	case s.Nodename != "" && !namePattern.MatchString(s.Nodename):
		return fmt.Errorf("affiliate %s: invalid node name %q", s.NodeID, s.Nodename)
	case !slices.Contains(machineTypes, s.MachineType):
		return fmt.Errorf("affiliate %s: invalid machine type %q", s.NodeID, s.MachineType)
	case len(s.OperatingSystem) > maxField:
		return fmt.Errorf("affiliate %s: operating system name too long", s.NodeID)
	case len(s.Addresses) > MaxAddresses:
		return fmt.Errorf("affiliate %s: %d addresses, at most %d", s.NodeID, len(s.Addresses), MaxAddresses)
	case s.ControlPlane != nil && (s.ControlPlane.APIServerPort < 1 || s.ControlPlane.APIServerPort > 65535):
		return fmt.Errorf("affiliate %s: invalid API server port %d", s.NodeID, s.ControlPlane.APIServerPort)
	}

	for _, a := range s.Addresses {
		if !a.IsValid() {
			return errors.New("affiliate " + s.NodeID + ": invalid address")
		}
	}

	return nil
}

// Member is the member record of an affiliate.
func (s AffiliateSpec) Member() MemberSpec {
	return MemberSpec{NodeID: s.NodeID, Addresses: slices.Clone(s.Addresses), Hostname: s.Hostname, MachineType: s.MachineType,
		OperatingSystem: s.OperatingSystem, ControlPlane: cloneControlPlane(s.ControlPlane)}
}

// MemberID is the member's resource ID: the node name, else the hostname.
func (s AffiliateSpec) MemberID() string {
	if s.Nodename != "" {
		return s.Nodename
	}

	return s.Hostname
}
