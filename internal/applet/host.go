package applet

import (
	"net"
	"net/netip"
)

// HostAddrs are the global unicast addresses of this host's interfaces,
// in the kernel's order. An applet run alone has no node resources to ask
// for its addresses, so this is its default for certificate SANs and
// advertised addresses, as machined's own addresses are inside a node.
func HostAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}

	var out []netip.Addr

	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}

		if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().IsGlobalUnicast() {
			out = append(out, ip.Unmap())
		}
	}

	return out
}
