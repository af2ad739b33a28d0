package machine

import "net"

// LocalAddresses are the node's interface addresses, as the kernel has
// them: a container node runs no networkd to publish them.
func LocalAddresses() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}

	out := make([]net.IP, 0, len(addrs))

	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n.IP)
		}
	}

	return out
}
