package vip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/packet"
)

// etherTypeARP is ARP's EtherType (and the packet socket's protocol).
const etherTypeARP = 0x0806

// arpFrameLen is an Ethernet header and an IPv4-over-Ethernet ARP packet.
const arpFrameLen = 14 + 28

// GratuitousARP is an ARP request for ip from ip, broadcast from mac: every
// host on the segment that caches ip updates it to mac, so traffic for the
// shared IP reaches its new owner at once instead of after the neighbours'
// cache timeouts.
func GratuitousARP(mac net.HardwareAddr, ip netip.Addr) ([]byte, error) {
	if len(mac) != 6 {
		return nil, fmt.Errorf("gratuitous ARP: %q is not an Ethernet address", mac)
	}

	if !ip.Is4() {
		return nil, fmt.Errorf("gratuitous ARP: %s is not IPv4 (IPv6 uses unsolicited neighbour advertisements)", ip)
	}

	b := make([]byte, arpFrameLen)
	copy(b[0:6], broadcast)
	copy(b[6:12], mac)
	binary.BigEndian.PutUint16(b[12:14], etherTypeARP)

	a := b[14:]
	binary.BigEndian.PutUint16(a[0:2], 1)      // hardware: Ethernet
	binary.BigEndian.PutUint16(a[2:4], 0x0800) // protocol: IPv4
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:8], 1) // request
	copy(a[8:14], mac)
	ip4 := ip.As4()
	copy(a[14:18], ip4[:])
	// target hardware address stays zero; the target IP is the sender's
	copy(a[24:28], ip4[:])

	return b, nil
}

var broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ParseGratuitousARP returns the sender of a gratuitous ARP frame, or an
// error when frame is not one.
func ParseGratuitousARP(frame []byte) (net.HardwareAddr, netip.Addr, error) {
	if len(frame) < arpFrameLen || binary.BigEndian.Uint16(frame[12:14]) != etherTypeARP {
		return nil, netip.Addr{}, errors.New("not an ARP frame")
	}

	a := frame[14:]
	if binary.BigEndian.Uint16(a[0:2]) != 1 || binary.BigEndian.Uint16(a[2:4]) != 0x0800 || a[4] != 6 || a[5] != 4 {
		return nil, netip.Addr{}, errors.New("not IPv4 over Ethernet ARP")
	}

	sender, target := netip.AddrFrom4([4]byte(a[14:18])), netip.AddrFrom4([4]byte(a[24:28]))
	if sender != target {
		return nil, netip.Addr{}, fmt.Errorf("not gratuitous: %s asks for %s", sender, target)
	}

	return net.HardwareAddr(append([]byte(nil), a[8:14]...)), sender, nil
}

// Announce broadcasts a gratuitous ARP for ip on the link named link,
// through an AF_PACKET socket (CAP_NET_RAW).
func Announce(link string, ip netip.Addr) error {
	ifi, err := net.InterfaceByName(link)
	if err != nil {
		return fmt.Errorf("announce %s: %w", ip, err)
	}

	frame, err := GratuitousARP(ifi.HardwareAddr, ip)
	if err != nil {
		return err
	}

	conn, err := packet.Listen(ifi, packet.Raw, etherTypeARP, nil)
	if err != nil {
		return fmt.Errorf("announce %s on %s: %w", ip, link, err)
	}
	defer conn.Close()

	if _, err := conn.WriteTo(frame, &packet.Addr{HardwareAddr: broadcast}); err != nil {
		return fmt.Errorf("announce %s on %s: %w", ip, link, err)
	}

	return nil
}
