package pcap_test

import (
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/talosbox/talosbox/internal/pcap"
)

// frame serializes layers with gopacket: the packets Summary reads are
// built by another implementation.
func frame(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()

	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}

	return buf.Bytes()
}

func TestSummary(t *testing.T) {
	eth := func(typ layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: typ}
	}
	ip4 := func(p layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: p, SrcIP: net.IPv4(10, 5, 0, 2), DstIP: net.IPv4(10, 5, 0, 1)}
	}

	tcpIP := ip4(layers.IPProtocolTCP)
	tcp := &layers.TCP{SrcPort: 50000, DstPort: 41234, PSH: true, ACK: true, DataOffset: 5}
	tcp.SetNetworkLayerForChecksum(tcpIP)

	udpIP := ip4(layers.IPProtocolUDP)
	udp := &layers.UDP{SrcPort: 53, DstPort: 33000}
	udp.SetNetworkLayerForChecksum(udpIP)

	ip6 := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolUDP, HopLimit: 64, SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
	udp6 := &layers.UDP{SrcPort: 547, DstPort: 546}
	udp6.SetNetworkLayerForChecksum(ip6)

	for _, tc := range []struct {
		name     string
		linkType uint32
		data     []byte
		want     string
	}{
		{"tcp", pcap.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), tcpIP, tcp, gopacket.Payload(make([]byte, 48))), "IP 10.5.0.2.50000 > 10.5.0.1.41234: TCP [P.], length 48"},
		{"udp", pcap.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), udpIP, udp, gopacket.Payload(make([]byte, 12))), "IP 10.5.0.2.53 > 10.5.0.1.33000: UDP, length 12"},
		{"udp6 raw", pcap.LinkTypeRaw, frame(t, ip6, udp6, gopacket.Payload([]byte("x"))), "IP6 fd00::1.547 > fd00::2.546: UDP, length 1"},
		{"arp", pcap.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeARP), &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
			HwAddressSize: 6, ProtAddressSize: 4, Operation: layers.ARPRequest, SourceHwAddress: []byte{2, 0, 0, 0, 0, 1},
			SourceProtAddress: []byte{10, 5, 0, 2}, DstHwAddress: make([]byte, 6), DstProtAddress: []byte{10, 5, 0, 1}}), "ARP, Request who-has 10.5.0.1 tell 10.5.0.2"},
		{"short", pcap.LinkTypeEthernet, []byte{1, 2, 3}, "truncated frame, 3 bytes"},
		{"truncated tcp", pcap.LinkTypeRaw, frame(t, ip4(layers.IPProtocolTCP))[:12], "truncated IPv4 packet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pcap.Summary(tc.linkType, tc.data); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
