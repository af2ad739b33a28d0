package configs

import (
	"fmt"
	"strings"
)

// VLANConfig is Talos's VLANConfig: a VLAN link on a parent link. It is
// machine.network.interfaces[parent].vlans[vlanID]; networkd names the
// link after the document (v1alpha1's VLANs are always <parent>.<id>)
// and reads vlanMode, up and multicast from it.
type VLANConfig struct {
	Name   string `yaml:"name"`
	VLANID uint16 `yaml:"vlanID,omitempty"`
	// VLANMode is the VLAN protocol: 802.1q (the default) or 802.1ad.
	VLANMode  string        `yaml:"vlanMode,omitempty"`
	Parent    string        `yaml:"parent,omitempty"`
	Up        *bool         `yaml:"up,omitempty"`
	MTU       uint32        `yaml:"mtu,omitempty"`
	Addresses []LinkAddress `yaml:"addresses,omitempty"`
	Routes    []LinkRoute   `yaml:"routes,omitempty"`
	Multicast *bool         `yaml:"multicast,omitempty"`
}

// The VLAN protocols (Talos's nethelpers.VLANProtocol).
const (
	VLANProtocol8021Q  = "802.1q"
	VLANProtocol8021AD = "802.1ad"
)

// Kind implements Document.
func (*VLANConfig) Kind() string { return "VLANConfig" }

// DocumentName implements NamedDocument.
func (l *VLANConfig) DocumentName() string { return l.Name }

// LinkSettings implements LinkDocument.
func (l *VLANConfig) LinkSettings() LinkSettings {
	return LinkSettings{Up: l.Up, MTU: l.MTU, Addresses: l.Addresses, Routes: l.Routes, Multicast: l.Multicast}
}

// Protocol is the VLAN protocol, lower-case; 802.1q when unset.
func (l *VLANConfig) Protocol() string {
	if l.VLANMode == "" {
		return VLANProtocol8021Q
	}

	return strings.ToLower(l.VLANMode)
}

func (l *VLANConfig) check(v *validator, path string) {
	v.linkName(path, l.Name)

	if l.VLANID == 0 || l.VLANID > 4094 {
		v.errorf(path+".vlanID", "vlanID must be specified and between 1 and 4094, got %d", l.VLANID)
	}

	switch {
	case l.Parent == "":
		v.errorf(path+".parent", "parent must be specified: the link the VLAN is tagged on (eth0)")
	case l.Parent == l.Name:
		v.errorf(path+".parent", "a VLAN link cannot be its own parent (%q)", l.Parent)
	}

	if p := l.Protocol(); p != VLANProtocol8021Q && p != VLANProtocol8021AD {
		v.errorf(path+".vlanMode", "vlanMode must be either '802.1q' or '802.1ad', got %q", l.VLANMode)
	}

	v.linkSettings(path, l.LinkSettings())
	v.linkClaims(path, l)

	for _, other := range DocumentsOf[*VLANConfig](v.cfg) {
		if other == l {
			break
		}

		if other.Parent == l.Parent && other.VLANID == l.VLANID && l.Parent != "" {
			v.errorf(path+".vlanID", "VLAN %d on %q is already configured by %s", l.VLANID, l.Parent, documentID(other.Kind(), other.Name, true))

			break
		}
	}
}

// declares reports whether the document names a VLAN to fold into: one
// with a parent and a valid ID (check refuses the others).
func (l *VLANConfig) declares() bool {
	return l.Parent != "" && l.Parent != l.Name && l.VLANID > 0 && l.VLANID <= 4094
}

func (l *VLANConfig) fold(f *folding) {
	if !l.declares() {
		return
	}

	if w := f.written.Machine; w != nil && w.Network != nil {
		for i, d := range w.Network.Interfaces {
			for j, vl := range d.VLANs {
				if d.Interface == l.Parent && vl.ID == l.VLANID {
					f.problem("vlanID", "VLAN %d on %q is already declared in the v1alpha1 document (machine.network.interfaces[%d].vlans[%d]): "+
						"declare it in one place", l.VLANID, l.Parent, i, j)
				}
			}
		}
	}

	t := f.vlanTarget(l.Parent, l.VLANID)
	lf := f.fields(t)
	f.alias(lf.path+".vlanId", "vlanID")
	f.foldLink(t, l.LinkSettings())
}

// VLANLinkName is the name networkd gives the VLAN id on parent: the
// name of the VLANConfig that declares it, or Talos's <parent>.<id>.
func VLANLinkName(cfg *Config, parent string, id uint16) string {
	for _, d := range DocumentsOf[*VLANConfig](cfg) {
		if d.Parent == parent && d.VLANID == id && d.declares() {
			return d.Name
		}
	}

	return fmt.Sprintf("%s.%d", parent, id)
}
