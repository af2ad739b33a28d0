package qemu

import (
	"fmt"
	"net"
)

// Wire is a private point-to-point Ethernet segment between two NICs of
// two guests: QEMU's socket netdev in UDP mode on 127.0.0.1, each end
// sending to the other's port. Unlike listen=/connect=, neither guest has
// to start first, and nothing leaves the loopback interface. (A segment
// with more than two guests needs a hub: a stream/dgram netdev to a vde
// switch, or a bridge in a network namespace; issue 9 adds one when a
// test needs three nodes on one wire.)
type Wire struct {
	portA, portB int
}

// NewWire reserves two loopback UDP ports. They are free when reserved
// and only bound again by QEMU, a tiny window another process could in
// theory take them in (QEMU would then fail to start, not misroute).
func NewWire() (*Wire, error) {
	var ports [2]int

	conns := make([]net.PacketConn, 0, 2)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	for i := range ports {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a loopback UDP port: %w", err)
		}

		conns = append(conns, c)
		ports[i] = c.LocalAddr().(*net.UDPAddr).Port //nolint:forcetypeassert // udp4
	}

	return &Wire{portA: ports[0], portB: ports[1]}, nil
}

// A is the netdev backend for the NIC on one end.
func (w *Wire) A() string {
	return fmt.Sprintf("socket,udp=127.0.0.1:%d,localaddr=127.0.0.1:%d", w.portB, w.portA)
}

// B is the netdev backend for the NIC on the other end.
func (w *Wire) B() string {
	return fmt.Sprintf("socket,udp=127.0.0.1:%d,localaddr=127.0.0.1:%d", w.portA, w.portB)
}

// MAC returns a locally administered unicast address for NIC nic of
// guest node: 52:54:00:00:<node>:<nic>.
func MAC(node, nic int) string {
	return fmt.Sprintf("52:54:00:00:%02x:%02x", node&0xff, nic&0xff)
}
