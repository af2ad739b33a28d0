// Package pcap captures an interface's packets with an AF_PACKET socket
// and writes them as a pcap file, for `talosctl pcap`. The filter is a
// classic BPF program (what `tcpdump -dd` prints), attached in the kernel
// before the socket is bound, so nothing unfiltered is ever queued.
package pcap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// DefaultSnapLen is how much of a packet is kept when the request says
// nothing: all of any packet an interface's MTU allows.
const DefaultSnapLen = 65536

// Options describe one capture.
type Options struct {
	Interface   string
	Promiscuous bool
	// SnapLen bounds the bytes kept of each packet; DefaultSnapLen when 0.
	SnapLen uint32
	// Filter is a classic BPF program; every packet when empty.
	Filter []bpf.RawInstruction
	// SysRoot is sysfs, where the interface's link type is read
	// (/sys when empty).
	SysRoot string
}

// Capture writes a pcap file of what the interface sees to w until ctx
// ends (which is not an error) or a write fails. The header is written
// before the first packet, so a capture that saw nothing is still a
// valid, empty file.
func Capture(ctx context.Context, w io.Writer, opts Options) error {
	ifi, err := net.InterfaceByName(opts.Interface)
	if err != nil {
		return fmt.Errorf("pcap: interface %q: %w", opts.Interface, err)
	}

	snap := opts.SnapLen
	if snap == 0 {
		snap = DefaultSnapLen
	}

	linkType := linkTypeOf(opts.SysRoot, ifi.Name)

	f, err := open(ifi, opts)
	if err != nil {
		return err
	}

	// Closing the file wakes a read parked in the runtime's poller.
	stop := context.AfterFunc(ctx, func() { f.Close() }) //nolint:errcheck
	defer func() {
		if stop() {
			f.Close() //nolint:errcheck
		}
	}()

	if _, err := w.Write(FileHeader(snap, linkType)); err != nil {
		return fmt.Errorf("pcap: %w", err)
	}

	if fl, ok := w.(interface{ Flush() error }); ok {
		if err := fl.Flush(); err != nil {
			return err
		}
	}

	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("pcap: %w", err)
	}

	buf := make([]byte, snap)

	for {
		var (
			n    int
			rerr error
		)

		err := rc.Read(func(fd uintptr) bool {
			n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_TRUNC)

			return !errors.Is(rerr, unix.EAGAIN)
		})

		if ctx.Err() != nil {
			return nil
		}

		if err == nil {
			err = rerr
		}

		if err != nil {
			return fmt.Errorf("pcap: read %s: %w", ifi.Name, err)
		}

		kept := min(n, len(buf))
		if _, err := w.Write(append(RecordHeader(time.Now(), kept, n), buf[:kept]...)); err != nil {
			return fmt.Errorf("pcap: %w", err)
		}

		if fl, ok := w.(interface{ Flush() error }); ok {
			if err := fl.Flush(); err != nil {
				return err
			}
		}
	}
}

// open makes the packet socket: filter first, then membership and bind.
// The socket is made for protocol 0, which receives nothing: one made for
// ETH_P_ALL would queue every interface's packets, unfiltered, until the
// filter and the bind are in place.
func open(ifi *net.Interface, opts Options) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pcap: packet socket: %w", err)
	}

	fail := func(what string, err error) (*os.File, error) {
		unix.Close(fd) //nolint:errcheck

		return nil, fmt.Errorf("pcap: %s %s: %w", what, ifi.Name, err)
	}

	if len(opts.Filter) > 0 {
		prog := make([]unix.SockFilter, len(opts.Filter))
		for i, ins := range opts.Filter {
			prog[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
		}

		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
			return fail("attach filter to", err)
		}
	}

	if opts.Promiscuous {
		mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return fail("promiscuous mode on", err)
		}
	}

	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("bind to", err)
	}

	return os.NewFile(uintptr(fd), "packet:"+ifi.Name), nil
}

// linkTypeOf says what the frames of an interface start with: an
// Ethernet header (Ethernet, loopback, bridges, veths), or nothing (a
// WireGuard or other layer-3 tunnel: raw IP).
func linkTypeOf(sysRoot, name string) uint32 {
	if sysRoot == "" {
		sysRoot = "/sys"
	}

	b, err := os.ReadFile(sysRoot + "/class/net/" + name + "/type")
	if err != nil {
		return LinkTypeEthernet
	}

	t, _ := strconv.Atoi(strings.TrimSpace(string(b)))

	switch t {
	case unix.ARPHRD_NONE, unix.ARPHRD_TUNNEL, unix.ARPHRD_TUNNEL6, unix.ARPHRD_IPGRE, unix.ARPHRD_SIT:
		return LinkTypeRaw
	default:
		return LinkTypeEthernet
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
