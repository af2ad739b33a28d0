package pcap

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// Summary is one line about a packet, in tcpdump's manner:
// "IP 10.5.0.2.50000 > 10.5.0.1.41234: TCP [P.], length 48". What it
// cannot decode it names by its EtherType or protocol number.
func Summary(linkType uint32, data []byte) string {
	if linkType == LinkTypeRaw {
		return network(data)
	}

	if len(data) < 14 {
		return fmt.Sprintf("truncated frame, %d bytes", len(data))
	}

	etherType, payload := binary.BigEndian.Uint16(data[12:]), data[14:]
	if etherType == 0x8100 && len(payload) >= 4 { // 802.1Q
		etherType, payload = binary.BigEndian.Uint16(payload[2:]), payload[4:]
	}

	switch etherType {
	case 0x0800, 0x86dd:
		return network(payload)
	case 0x0806:
		return arp(payload)
	default:
		return fmt.Sprintf("ethertype %#04x, length %d", etherType, len(data))
	}
}

func network(p []byte) string {
	if len(p) == 0 {
		return "empty packet"
	}

	var (
		src, dst netip.Addr
		proto    byte
		l4       []byte
		family   string
	)

	switch p[0] >> 4 {
	case 4:
		ihl := int(p[0]&0x0f) * 4
		if len(p) < 20 || ihl < 20 || len(p) < ihl {
			return "truncated IPv4 packet"
		}

		// Frames are padded to Ethernet's minimum: the IP length says
		// where the packet ends.
		if total := int(binary.BigEndian.Uint16(p[2:])); total >= ihl && total < len(p) {
			p = p[:total]
		}

		src, dst = netip.AddrFrom4([4]byte(p[12:16])), netip.AddrFrom4([4]byte(p[16:20]))
		proto, l4, family = p[9], p[ihl:], "IP"
	case 6:
		if len(p) < 40 {
			return "truncated IPv6 packet"
		}

		if total := 40 + int(binary.BigEndian.Uint16(p[4:])); total < len(p) {
			p = p[:total]
		}

		src, dst = netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40]))
		proto, l4, family = p[6], p[40:], "IP6"
	default:
		return fmt.Sprintf("IP version %d", p[0]>>4)
	}

	switch proto {
	case 6:
		if len(l4) < 20 {
			return fmt.Sprintf("%s %s > %s: truncated TCP", family, src, dst)
		}

		off := int(l4[12]>>4) * 4

		return fmt.Sprintf("%s %s.%d > %s.%d: TCP [%s], length %d", family, src, binary.BigEndian.Uint16(l4), dst, binary.BigEndian.Uint16(l4[2:]),
			tcpFlags(l4[13]), max(len(l4)-off, 0))
	case 17:
		if len(l4) < 8 {
			return fmt.Sprintf("%s %s > %s: truncated UDP", family, src, dst)
		}

		return fmt.Sprintf("%s %s.%d > %s.%d: UDP, length %d", family, src, binary.BigEndian.Uint16(l4), dst, binary.BigEndian.Uint16(l4[2:]), len(l4)-8)
	case 1, 58:
		if len(l4) < 2 {
			return fmt.Sprintf("%s %s > %s: truncated ICMP", family, src, dst)
		}

		return fmt.Sprintf("%s %s > %s: ICMP type %d code %d, length %d", family, src, dst, l4[0], l4[1], len(l4))
	default:
		return fmt.Sprintf("%s %s > %s: protocol %d, length %d", family, src, dst, proto, len(l4))
	}
}

func tcpFlags(f byte) string {
	var b strings.Builder

	for _, fl := range []struct {
		bit byte
		c   byte
	}{{0x02, 'S'}, {0x01, 'F'}, {0x04, 'R'}, {0x08, 'P'}, {0x20, 'U'}} {
		if f&fl.bit != 0 {
			b.WriteByte(fl.c)
		}
	}

	if f&0x10 != 0 {
		b.WriteByte('.')
	}

	if b.Len() == 0 {
		return "none"
	}

	return b.String()
}

func arp(p []byte) string {
	if len(p) < 28 {
		return "truncated ARP"
	}

	sender, target := netip.AddrFrom4([4]byte(p[14:18])), netip.AddrFrom4([4]byte(p[24:28]))

	switch binary.BigEndian.Uint16(p[6:]) {
	case 1:
		return fmt.Sprintf("ARP, Request who-has %s tell %s", target, sender)
	case 2:
		return fmt.Sprintf("ARP, Reply %s is-at %x", sender, p[8:14])
	default:
		return "ARP"
	}
}
