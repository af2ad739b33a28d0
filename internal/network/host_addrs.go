package network

import (
	"net"
	"net/netip"
)

// HostAddrs are the global unicast addresses of this host's interfaces,
// as the kernel has them now, in its order: a control plane's etcd and
// certificates use them, and so do applets run alone, which have no
// NodeAddresses to ask.
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
