package network

import (
	"fmt"
	"net/netip"
	"strings"
)

// Cmdline is what networkd takes from the kernel command line: the
// kernel's ip= (Documentation/admin-guide/nfs/nfsroot.rst) and
// talos.hostname=.
type Cmdline struct {
	// Address is the client address with its prefix; invalid when unset.
	Address  netip.Prefix
	Gateway  netip.Addr
	Hostname string
	// LinkName is the device; empty means "the first ethernet link".
	LinkName string
	// DHCP is set by autoconf dhcp, on or any (and by ip=dhcp).
	DHCP        bool
	DNSServers  []netip.Addr
	NTPServers  []string
	HasIP       bool // an ip= was given at all
	HostnameSet bool // talos.hostname= was given (it wins over ip=)
}

// ParseCmdline reads ip= and talos.hostname= out of a kernel command line.
// Only the last ip= counts, as in the kernel.
func ParseCmdline(cmdline string) (Cmdline, error) {
	var (
		c  Cmdline
		ip string
	)

	for _, arg := range strings.Fields(cmdline) {
		switch k, v, _ := strings.Cut(arg, "="); k {
		case "ip":
			ip = v
			c.HasIP = true
		case "talos.hostname":
			c.Hostname, c.HostnameSet = v, true
		}
	}

	if !c.HasIP {
		return c, nil
	}

	if err := c.parseIP(ip); err != nil {
		return Cmdline{}, fmt.Errorf("kernel command line ip=%s: %w", ip, err)
	}

	return c, nil
}

// parseIP parses
// <client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:<autoconf>:<dns0-ip>:<dns1-ip>:<ntp0-ip>.
func (c *Cmdline) parseIP(v string) error {
	switch v {
	case "", "off", "none":
		return nil
	case "dhcp", "on", "any", "dhcp6", "both":
		c.DHCP = true
		return nil
	}

	f := splitIPFields(v)
	field := func(i int) string {
		if i < len(f) {
			return f[i]
		}

		return ""
	}

	var client netip.Addr

	if s := field(0); s != "" {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("client address: %w", err)
		}

		client = a
	}

	if s := field(2); s != "" {
		gw, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}

		c.Gateway = gw
	}

	if client.IsValid() {
		bits, err := maskBits(field(3), client)
		if err != nil {
			return err
		}

		c.Address = netip.PrefixFrom(client, bits)
	}

	if !c.HostnameSet {
		c.Hostname = field(4)
	}

	c.LinkName = field(5)

	switch field(6) {
	case "dhcp", "on", "any", "dhcp6", "both":
		c.DHCP = true
	}

	for i := 7; i <= 8; i++ {
		if s := field(i); s != "" {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return fmt.Errorf("dns%d: %w", i-7, err)
			}

			c.DNSServers = append(c.DNSServers, a)
		}
	}

	if s := field(9); s != "" {
		c.NTPServers = append(c.NTPServers, s)
	}

	return nil
}

// splitIPFields splits on ':' outside brackets, so IPv6 addresses are
// written [2001:db8::1].
func splitIPFields(v string) []string {
	var (
		out   []string
		cur   strings.Builder
		inBkt bool
	)

	for _, r := range v {
		switch {
		case r == '[':
			inBkt = true
		case r == ']':
			inBkt = false
		case r == ':' && !inBkt:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}

	return append(out, cur.String())
}

// maskBits turns a dotted netmask or a prefix length into a prefix
// length. Without one, IPv4 gets its classful mask (what the kernel
// assumes) and IPv6 a /64.
func maskBits(mask string, client netip.Addr) (int, error) {
	if mask == "" {
		if client.Is6() {
			return 64, nil
		}

		switch b := client.As4()[0]; {
		case b < 128:
			return 8, nil
		case b < 192:
			return 16, nil
		default:
			return 24, nil
		}
	}

	if m, err := netip.ParseAddr(mask); err == nil && m.Is4() {
		bits, ok := contiguousOnes(m.As4())
		if !ok {
			return 0, fmt.Errorf("netmask %s is not contiguous", mask)
		}

		return bits, nil
	}

	var n int
	if _, err := fmt.Sscanf(mask, "%d", &n); err != nil || n < 0 || n > client.BitLen() {
		return 0, fmt.Errorf("invalid netmask %q", mask)
	}

	return n, nil
}

func contiguousOnes(b [4]byte) (int, bool) {
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n := 0

	for v&(1<<31) != 0 {
		n++
		v <<= 1
	}

	return n, v == 0
}
