package dhcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"golang.org/x/sys/unix"
)

const (
	clientPort = 68
	serverPort = 67
)

var broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// rawConn carries DHCP over an AF_PACKET datagram socket bound to one
// interface. A UDP socket will not do: before the lease the interface has
// no address to send from, and the kernel drops offers addressed to an
// address it does not own yet. We write the IPv4 and UDP headers ourselves,
// which also lets renewals carry the leased address as source (a server's
// kernel drops unicast with source 0.0.0.0 as martian).
//
// nclient4 does the same, but it cannot set the source address of its raw
// socket without also filtering replies by it, and it does not build with
// this module's go.sum (github.com/mdlayher/packet is missing).
type rawConn struct {
	f       *os.File
	rc      syscall.RawConn
	ifindex int
	hw      net.HardwareAddr
}

// openRaw opens the socket in the network namespace of the calling OS
// thread: that is where the kernel looks up ifname and where the socket
// stays for its whole life.
func openRaw(ifname string) (*rawConn, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", ifname, err)
	}

	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%s: DHCP needs an Ethernet address, have %q", ifname, ifi.HardwareAddr)
	}

	// Protocol 0 receives nothing until bind, so no frame from another
	// interface or not matching the filter can sneak in before both apply.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open packet socket: %w", err)
	}

	prog := replyFilter()
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
		&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("attach packet filter: %w", err)
	}

	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind packet socket to %s: %w", ifname, err)
	}

	f := os.NewFile(uintptr(fd), "dhcp:"+ifname)

	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("packet socket: %w", err)
	}

	return &rawConn{f: f, rc: rc, ifindex: ifi.Index, hw: ifi.HardwareAddr}, nil
}

func (c *rawConn) Close() error { return c.f.Close() }

// replyFilter is a classic BPF program keeping only unfragmented UDP to port
// 68, so a busy interface does not wake the client for every IPv4 packet.
// A datagram packet socket hands the filter the frame from the IP header on.
func replyFilter() []unix.SockFilter {
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 9}, // protocol
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.IPPROTO_UDP, Jf: 6},
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 6}, // flags, fragment offset
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x1fff, Jt: 4},
		{Code: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, K: 0}, // X = IP header length
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_IND, K: 2},  // UDP destination port
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: clientPort, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0xffff},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
}

// path says where a message goes: zero addresses mean 0.0.0.0 as source and
// 255.255.255.255 as destination, a nil MAC the Ethernet broadcast.
type path struct {
	src, dst netip.Addr
	mac      net.HardwareAddr
}

func (c *rawConn) send(payload []byte, p path) error {
	src, dst := p.src, p.dst
	if !src.IsValid() {
		src = netip.IPv4Unspecified()
	}

	if !dst.IsValid() {
		dst = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	}

	mac := p.mac
	if mac == nil {
		mac = broadcastMAC
	}

	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: c.ifindex, Halen: 6}
	copy(sa.Addr[:], mac)

	pkt := udp4(payload, src, dst)

	var serr error

	err := c.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), pkt, 0, sa)
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}

	if err != nil {
		return fmt.Errorf("send DHCP %s to %s: %w", msgType(payload), dst, err)
	}

	return nil
}

// recv returns the next BOOTREPLY for this client's hardware address and
// the link-layer address it came from, waiting until deadline.
func (c *rawConn) recv(ctx context.Context, buf []byte, deadline time.Time) (*dhcpv4.DHCPv4, net.HardwareAddr, error) {
	if err := c.f.SetReadDeadline(deadline); err != nil {
		return nil, nil, err
	}

	// Checked after setting the deadline: exchange's AfterFunc moves the
	// deadline into the past on cancel, and must not be undone unseen.
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}

	for {
		var (
			n    int
			from unix.Sockaddr
			rerr error
		)

		err := c.rc.Read(func(fd uintptr) bool {
			n, from, rerr = unix.Recvfrom(int(fd), buf, 0)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}

		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, nil, cerr
			}

			return nil, nil, err
		}

		ll, _ := from.(*unix.SockaddrLinklayer)
		if ll != nil && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}

		payload, ok := udp4Payload(buf[:n])
		if !ok {
			continue
		}

		msg, err := dhcpv4.FromBytes(payload)
		if err != nil || msg.OpCode != dhcpv4.OpcodeBootReply || !bytes.Equal(msg.ClientHWAddr, c.hw) {
			continue
		}

		var mac net.HardwareAddr
		if ll != nil && ll.Halen == 6 {
			mac = net.HardwareAddr(bytes.Clone(ll.Addr[:6]))
		}

		return msg, mac, nil
	}
}

// exchange sends msg and returns the first reply with its transaction ID
// that match accepts. It retransmits tries times, the wait doubling from
// 2 s with up to half a second of jitter (RFC 2131 4.1 starts at 4 s; links
// here are LANs and VMs where a faster first retry costs nothing).
func (c *rawConn) exchange(ctx context.Context, msg *dhcpv4.DHCPv4, p path, tries int, match func(*dhcpv4.DHCPv4) bool) (*dhcpv4.DHCPv4, net.HardwareAddr, error) {
	stop := context.AfterFunc(ctx, func() { c.f.SetReadDeadline(time.Unix(1, 0)) }) //nolint:errcheck // only fails once closed
	defer stop()

	payload := msg.ToBytes()
	buf := make([]byte, 4096)
	wait := 2 * time.Second

	for range tries {
		if err := c.send(payload, p); err != nil {
			return nil, nil, &socketError{err}
		}

		deadline := time.Now().Add(wait + rand.N(time.Second) - time.Second/2)
		wait *= 2

		for {
			reply, mac, err := c.recv(ctx, buf, deadline)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}

			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}

			if err != nil {
				return nil, nil, &socketError{fmt.Errorf("receive DHCP reply: %w", err)}
			}

			if reply.TransactionID == msg.TransactionID && match(reply) {
				return reply, mac, nil
			}
		}
	}

	return nil, nil, fmt.Errorf("no reply to DHCP %s after %d tries: %w", msg.MessageType(), tries, errNoReply)
}

var errNoReply = errors.New("no answer from a DHCP server")

// socketError is a failure of the socket itself rather than of the
// exchange: the session ends and Run opens a new socket after a backoff.
type socketError struct{ err error }

func (e *socketError) Error() string { return e.err.Error() }
func (e *socketError) Unwrap() error { return e.err }

func msgType(payload []byte) string {
	if m, err := dhcpv4.FromBytes(payload); err == nil {
		return m.MessageType().String()
	}

	return "message"
}

// udp4 wraps payload in IPv4 and UDP headers, client port to server port.
func udp4(payload []byte, src, dst netip.Addr) []byte {
	const ipLen, udpLen = 20, 8

	pkt := make([]byte, ipLen+udpLen+len(payload))
	ip, udp := pkt[:ipLen], pkt[ipLen:ipLen+udpLen]
	s, d := src.As4(), dst.As4()

	ip[0] = 0x45 // version 4, 5 words of header
	binary.BigEndian.PutUint16(ip[2:], uint16(len(pkt)))
	ip[8] = 64 // TTL
	ip[9] = unix.IPPROTO_UDP
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], fold(sum16(ip, 0)))

	binary.BigEndian.PutUint16(udp[0:], clientPort)
	binary.BigEndian.PutUint16(udp[2:], serverPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen+len(payload)))
	copy(pkt[ipLen+udpLen:], payload)

	// The pseudo-header: addresses, protocol, UDP length.
	pseudo := make([]byte, 12)
	copy(pseudo[0:4], s[:])
	copy(pseudo[4:8], d[:])
	pseudo[9] = unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(pseudo[10:], uint16(udpLen+len(payload)))

	sum := fold(sum16(pkt[ipLen:], sum16(pseudo, 0)))
	if sum == 0 {
		sum = 0xffff // 0 means "no checksum" in UDP over IPv4
	}

	binary.BigEndian.PutUint16(udp[6:], sum)

	return pkt
}

// sum16 adds b, as big-endian 16-bit words, to sum; fold finishes the
// Internet checksum (RFC 1071) from it.
func sum16(b []byte, sum uint32) uint32 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}

	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}

	return sum
}

func fold(sum uint32) uint16 {
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}

	return ^uint16(sum)
}

// udp4Payload returns the UDP payload of an IPv4 packet, or false if the
// packet is malformed. UDP checksums are not checked: frames between
// namespaces arrive with the checksum still offloaded (not filled in).
func udp4Payload(pkt []byte) ([]byte, bool) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return nil, false
	}

	hl := int(pkt[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(pkt[2:]))

	if hl < 20 || total < hl+8 || total > len(pkt) || pkt[9] != unix.IPPROTO_UDP {
		return nil, false
	}

	udp := pkt[hl:total]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))

	if binary.BigEndian.Uint16(udp[2:]) != clientPort || ulen < 8 || ulen > len(udp) {
		return nil, false
	}

	return udp[8:ulen], true
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
