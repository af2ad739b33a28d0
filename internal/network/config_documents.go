package network

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// The typed network documents are folded into machine.network where it
// can say the same (configs/doc_*.go); what it cannot say is read here
// from the documents themselves: a link that is down, its multicast flag
// and MAC address, a VLAN's name and protocol, WireGuard preshared keys,
// routes of other tables than main, the DHCP client's options and
// Layer2VIPConfig's shared IPs.

// linkDocument is the document that configures link name, or nil.
func (s *source) linkDocument(name string) configs.LinkDocument {
	for _, d := range configs.DocumentsOf[configs.LinkDocument](s.cfg) {
		if d.DocumentName() == name {
			return d
		}
	}

	return nil
}

// documentsConfigureNetwork reports whether link or DHCP documents
// configure the network: then, as in Talos, no link gets default DHCP.
func (s *source) documentsConfigureNetwork() bool {
	return len(configs.DocumentsOf[configs.LinkDocument](s.cfg)) > 0 ||
		len(configs.DocumentsOf[*configs.DHCPv4Config](s.cfg)) > 0 ||
		len(configs.DocumentsOf[*configs.DHCPv6Config](s.cfg)) > 0
}

// vlanName is the name of VLAN id on parent: a VLANConfig's name, or
// Talos's <parent>.<id>.
func (s *source) vlanName(parent string, id uint16) string {
	return configs.VLANLinkName(s.cfg, parent, id)
}

// applyLinkDocument sets on spec what the link's document says that
// machine.network cannot.
func (s *source) applyLinkDocument(spec *network.LinkSpecSpec) {
	doc := s.linkDocument(spec.Name)
	if doc == nil {
		return
	}

	set := doc.LinkSettings()

	if set.Up != nil {
		spec.Up = *set.Up
	}

	if set.Multicast != nil {
		m := *set.Multicast
		spec.Multicast = &m
	}

	if hw, ok := doc.(configs.HardwareAddrDocument); ok && hw.LinkHardwareAddr() != "" {
		spec.HardwareAddr = strings.ToLower(hw.LinkHardwareAddr())
	}

	switch d := doc.(type) {
	case *configs.VLANConfig:
		spec.VLAN.Protocol = d.Protocol()
	case *configs.WireguardConfig:
		for i := range spec.WireGuard.Peers {
			spec.WireGuard.Peers[i].PresharedKey = d.PresharedKey(spec.WireGuard.Peers[i].PublicKey)
		}
	}
}

// documentRoutes are the link documents' routes of other tables than
// main (those of main are machine.network's).
func (s *source) documentRoutes(out *layeredSet[network.RouteSpecSpec], is issues) {
	for _, doc := range configs.DocumentsOf[configs.LinkDocument](s.cfg) {
		link := doc.DocumentName()

		for i, r := range doc.LinkSettings().Routes {
			if r.MainTable() {
				continue
			}

			table, err := configs.ParseRoutingTable(r.Table)
			if err != nil {
				is.fail(routeIssue(link, i), err)
				continue
			}

			spec, err := routeSpec(link, configs.Route{Network: r.Destination, Gateway: r.Gateway, Source: r.Source, Metric: r.Metric, MTU: r.MTU})
			if err != nil {
				is.fail(routeIssue(link, i), err)
				continue
			}

			spec.Table = network.RoutingTable(table)
			out.add(spec.ID(), spec)
		}
	}
}

func routeIssue(link string, i int) string { return fmt.Sprintf("route/%s/document/%d", link, i) }

// applyDHCPDocument sets on a DHCPv4 operator spec what the link's
// DHCPv4Config says that machine.network cannot.
func (s *source) applyDHCPDocument(spec *network.OperatorSpecSpec) {
	for _, d := range configs.DocumentsOf[*configs.DHCPv4Config](s.cfg) {
		if d.Name != spec.LinkName {
			continue
		}

		spec.SkipHostnameRequest = spec.SkipHostnameRequest || (d.IgnoreHostname != nil && *d.IgnoreHostname)
		spec.SkipRoutes = d.IgnoreRoutes != nil && *d.IgnoreRoutes
		spec.ClientIdentifier = d.Identifier()

		if spec.ClientIdentifier == configs.ClientIdentifierDUID {
			spec.DUIDRaw = hex.EncodeToString(d.DUID())
		}
	}
}

// documentVIPs are the Layer2VIPConfig shared IPs, on a control plane.
func (s *source) documentVIPs(out *layeredSet[network.OperatorSpecSpec]) {
	if !s.controlPlane() {
		return
	}

	for _, d := range configs.DocumentsOf[*configs.Layer2VIPConfig](s.cfg) {
		ip, err := netip.ParseAddr(d.Name)
		if err != nil || d.Link == "" {
			continue // validation refuses it
		}

		spec := network.OperatorSpecSpec{Operator: network.OperatorVIP, LinkName: d.Link, RequireUp: true,
			VIP: network.VIPOperatorSpec{IP: ip, GratuitousARP: true}, Layer: network.LayerConfiguration}
		out.add(spec.ID(), spec)
	}
}
