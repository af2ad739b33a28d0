// Package networkd configures links, addresses, routes, DHCP, bonds, VLANs,
// WireGuard, the shared VIP, the hostname and resolvers.
package networkd

import "github.com/talosbox/talosbox/internal/applet"

// Applet is networkd's entry in the multicall table.
var Applet = applet.Pending("networkd", "network: links, addresses, routes, DHCP, bonds, VLANs, WireGuard",
	"Reconcile the machine config's network section with the kernel over netlink:\nlinks, addresses, routes, DHCP, bonds, VLANs, WireGuard, the shared VIP,\nhostname and resolvers. Run alone with --config machine.yaml.",
	"issue 6")
