// Package hostdns is the node's DNS forwarder, Talos's host DNS
// (machine.features.hostDNS): it listens on a link-local address pods can
// reach (169.254.116.108, on the node's loopback) and relays queries, UDP
// and TCP, to the node's own resolvers. With forwardKubeDNSToHost, the
// kubelet's resolv.conf names it, so CoreDNS forwards here; that is what
// lets CoreDNS work on a node whose resolver is loopback-only (Docker's
// embedded 127.0.0.11), which a pod's network namespace cannot reach.
//
// It relays packets without parsing them: the upstream's answer, ID and
// all, goes back to the asker unchanged.
package hostdns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
)

// Address is Talos's host DNS address, reachable from pods.
var Address = netip.MustParseAddr("169.254.116.108")

// Options configure a Server.
type Options struct {
	// Listen is where queries arrive (default Address:53).
	Listen netip.AddrPort
	// Upstreams says where to relay, read anew for every query (the
	// node's resolvers change with DHCP and config). Queries go to the
	// first, then the next on failure.
	Upstreams func() []netip.AddrPort
	// Timeout bounds one upstream exchange (default 5s).
	Timeout time.Duration
	// MaxInflight caps concurrent UDP queries (default 256); beyond it,
	// queries are dropped and the client retries, as with a busy resolver.
	MaxInflight int
}

func (o *Options) defaults() {
	if !o.Listen.IsValid() {
		o.Listen = netip.AddrPortFrom(Address, 53)
	}

	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}

	if o.MaxInflight == 0 {
		o.MaxInflight = 256
	}
}

// Serve relays queries until ctx ends. It returns an error when it cannot
// listen.
func Serve(ctx context.Context, opts Options) error {
	opts.defaults()

	var lc net.ListenConfig

	pc, err := lc.ListenPacket(ctx, "udp", opts.Listen.String())
	if err != nil {
		return fmt.Errorf("host dns: %w", err)
	}

	ln, err := lc.Listen(ctx, "tcp", opts.Listen.String())
	if err != nil {
		pc.Close()
		return fmt.Errorf("host dns: %w", err)
	}

	go func() {
		<-ctx.Done()
		pc.Close()
		ln.Close()
	}()

	var wg sync.WaitGroup

	wg.Add(2)

	go func() { defer wg.Done(); serveUDP(pc, opts) }()
	go func() { defer wg.Done(); serveTCP(ln, opts) }()

	wg.Wait()

	return nil
}

func serveUDP(pc net.PacketConn, opts Options) {
	sem := make(chan struct{}, opts.MaxInflight)
	buf := make([]byte, 65535)

	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}

			continue
		}

		select {
		case sem <- struct{}{}:
		default:
			continue // saturated: drop, the client retries
		}

		q := append([]byte(nil), buf[:n]...)

		go func() {
			defer func() { <-sem }()

			if resp, err := exchangeUDP(q, opts); err == nil {
				pc.WriteTo(resp, from) //nolint:errcheck // the client retries
			}
		}()
	}
}

func exchangeUDP(q []byte, opts Options) ([]byte, error) {
	err := errors.New("no upstream resolvers")

	for _, up := range opts.Upstreams() {
		var resp []byte

		if resp, err = udpOnce(q, up, opts.Timeout); err == nil {
			return resp, nil
		}
	}

	return nil, err
}

func udpOnce(q []byte, up netip.AddrPort, timeout time.Duration) ([]byte, error) {
	c, err := net.DialTimeout("udp", up.String(), timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	c.SetDeadline(time.Now().Add(timeout)) //nolint:errcheck // a conn from Dial

	if _, err := c.Write(q); err != nil {
		return nil, err
	}

	buf := make([]byte, 65535)

	for {
		n, err := c.Read(buf)
		if err != nil {
			return nil, err
		}

		// Only the answer to this query (same ID); anything else is stale.
		if n >= 2 && len(q) >= 2 && buf[0] == q[0] && buf[1] == q[1] {
			return buf[:n], nil
		}
	}
}

func serveTCP(ln net.Listener, opts Options) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}

			continue
		}

		go relayTCP(c, opts)
	}
}

// relayTCP pipes one client connection to the first upstream that
// accepts it; DNS over TCP is length-prefixed messages both ways, so a
// byte pipe is a faithful relay.
func relayTCP(c net.Conn, opts Options) {
	defer c.Close()

	var up net.Conn

	for _, addr := range opts.Upstreams() {
		var err error
		if up, err = net.DialTimeout("tcp", addr.String(), opts.Timeout); err == nil {
			break
		}
	}

	if up == nil {
		return
	}
	defer up.Close()

	idle := 2 * opts.Timeout
	c.SetDeadline(time.Now().Add(idle))  //nolint:errcheck // a net.Conn
	up.SetDeadline(time.Now().Add(idle)) //nolint:errcheck // a net.Conn

	done := make(chan struct{}, 2)

	go func() { io.Copy(up, c); done <- struct{}{} }() //nolint:errcheck // either side closing ends the relay
	go func() { io.Copy(c, up); done <- struct{}{} }() //nolint:errcheck // either side closing ends the relay

	<-done
}

// ResolvConf reads the nameservers of a resolv.conf, leaving out those in
// skip (the forwarder's own address, so it never forwards to itself).
func ResolvConf(path string, skip ...netip.Addr) []netip.AddrPort {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()

	var out []netip.AddrPort

	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}

		a, err := netip.ParseAddr(fields[1])
		if err != nil {
			continue
		}

		skipped := false

		for _, s := range skip {
			if a == s {
				skipped = true
			}
		}

		if !skipped {
			out = append(out, netip.AddrPortFrom(a.Unmap(), 53))
		}
	}

	return out
}
