package dhcp

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/testnet"
)

// The test network: testnet's hub namespace holds bridge br0 (10.5.0.1/24)
// and runs dnsmasq; the client runs in host 0's namespace on eth0, whose
// static address is removed so that only DHCP configures it.
const (
	clientMAC = "02:00:5e:00:53:01"
	hubAddr   = "10.5.0.1"
)

// syncBuffer collects a process's output while tests read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()

	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()

	return b.buf.String()
}

// dnsmasq is one run of the real server in the hub namespace.
type dnsmasq struct {
	cmd       *exec.Cmd
	log       *syncBuffer
	leaseFile string
	exited    chan struct{}
}

// startDnsmasq runs dnsmasq handing out first..last in the hub namespace
// and waits until it is serving. It is killed at cleanup; stop ends it
// earlier.
func startDnsmasq(t *testing.T, hub, dir, first, last string) *dnsmasq {
	t.Helper()

	if _, err := exec.LookPath("dnsmasq"); err != nil {
		t.Fatal("needs dnsmasq (Debian package dnsmasq-base)")
	}

	d := &dnsmasq{log: &syncBuffer{}, leaseFile: filepath.Join(dir, "leases"), exited: make(chan struct{})}

	d.cmd = testnet.Command(hub, "dnsmasq",
		"--no-daemon",
		"--conf-file=/dev/null",
		"--port=0", // no DNS: only DHCP is under test
		"--user=root",
		"--interface=br0",
		"--bind-interfaces",
		"--dhcp-range="+first+","+last+",255.255.255.0,2m", // 2m: dnsmasq's minimum
		"--dhcp-authoritative", // NAK what it does not know
		"--no-ping",            // offer at once rather than ping first
		"--dhcp-option=option:router,"+hubAddr,
		"--dhcp-option=option:dns-server,10.5.0.53,10.5.0.54",
		"--dhcp-option=option:domain-name,talosbox.test",
		"--dhcp-option=121,10.9.0.0/16,"+hubAddr,
		"--dhcp-option=option:ntp-server,10.5.0.123",
		"--dhcp-option=option:mtu,1420",
		"--dhcp-host="+clientMAC+",node-1",
		"--dhcp-leasefile="+d.leaseFile,
		"--log-dhcp",
		"--log-facility=-",
	)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log

	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start dnsmasq: %v", err)
	}

	go func() {
		d.cmd.Wait() //nolint:errcheck // killed on purpose
		close(d.exited)
	}()

	t.Cleanup(d.stop)

	// Ready once it logs the range and its bound socket (with
	// --no-daemon it writes no pid file to watch instead).
	poll(t, 10*time.Second, "dnsmasq ready", func() bool {
		select {
		case <-d.exited:
			t.Fatalf("dnsmasq exited: %s", d.log)
		default:
		}

		log := d.log.String()

		return strings.Contains(log, "DHCP, IP range "+first) && strings.Contains(log, "DHCP, sockets bound")
	})

	return d
}

func (d *dnsmasq) stop() {
	select {
	case <-d.exited:
		return
	default:
	}

	d.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // may be gone

	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill() //nolint:errcheck
		<-d.exited
	}
}

// leases is dnsmasq's lease file.
func (d *dnsmasq) leases() string {
	b, _ := os.ReadFile(d.leaseFile)
	return string(b)
}

// poll checks cond every 20 ms until it holds or timeout passes.
func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()

	if !eventually(timeout, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// eventually reports whether cond became true within timeout.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)

	defer tick.Stop()

	for !cond() {
		if time.Now().After(deadline) {
			return false
		}

		<-tick.C
	}

	return true
}

// bench is a test network with dnsmasq and a running client.
type bench struct {
	t      *testing.T
	nw     *testnet.Net
	ns     string // the client's namespace
	dir    string
	server *dnsmasq
	events chan Event // as seen by the networkd stand-in
	cancel context.CancelFunc
	done   chan error // Run's result
	// applied is closed when the stand-in has handled the last event:
	// it runs ip(8) in namespaces that cleanup deletes after stop.
	applied chan struct{}
}

func newBench(t *testing.T) *bench {
	t.Helper()

	nw := testnet.New(t, 1)
	b := &bench{t: t, nw: nw, ns: nw.Hosts[0].NS, dir: t.TempDir()}

	b.ip("link", "set", "eth0", "address", clientMAC)
	b.ip("addr", "flush", "dev", "eth0")

	b.server = startDnsmasq(t, nw.Hub, b.dir, "10.5.0.100", "10.5.0.150")

	return b
}

// ip runs ip(8) in the client's namespace.
func (b *bench) ip(args ...string) {
	b.t.Helper()

	if out, err := testnet.Command(b.ns, "ip", args...).CombinedOutput(); err != nil {
		b.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// run starts the client in the client's namespace with opts (Interface,
// Logf filled in). Between it and the test sits a stand-in for networkd
// that puts the leased address on eth0 and takes it off again: renewals
// are unicast to that address, so without it they could not succeed.
func (b *bench) run(opts Options) {
	b.t.Helper()

	opts.Interface = "eth0"
	opts.Logf = b.t.Logf

	c, err := New(opts)
	if err != nil {
		b.t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	raw := make(chan Event)
	b.events, b.cancel, b.done = make(chan Event, 64), cancel, make(chan error, 1)
	b.applied = make(chan struct{})

	go func() {
		err := testnet.InNS(b.ns, func() error { return c.Run(ctx, raw) })
		close(raw)
		b.done <- err
	}()

	go func() {
		defer close(b.applied)
		defer close(b.events)

		for ev := range raw {
			b.apply(ev)
			b.events <- ev
		}
	}()

	b.t.Cleanup(func() { b.stop() })
}

// apply is the networkd stand-in. Errors are reported, not fatal: this
// runs outside the test goroutine.
func (b *bench) apply(ev Event) {
	var args []string

	switch ev.Kind {
	case Acquired, Renewed, Rebound:
		args = []string{"addr", "replace", ev.Lease.Address.String(), "dev", "eth0"}
	case Expired, Released:
		args = []string{"addr", "del", ev.Lease.Address.String(), "dev", "eth0"}
	default:
		return
	}

	if out, err := testnet.Command(b.ns, "ip", args...).CombinedOutput(); err != nil {
		b.t.Errorf("networkd stand-in for %s: ip %s: %v: %s", ev, strings.Join(args, " "), err, out)
	}
}

// stop ends the client and waits for Run to return.
func (b *bench) stop() {
	if b.cancel == nil {
		return
	}

	b.cancel()
	b.cancel = nil

	select {
	case err := <-b.done:
		if err != nil {
			b.t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		b.t.Error("Run did not return after cancel")
		return
	}

	<-b.applied
}

// next returns the next event of one of kinds, skipping and logging others
// (Failed while a server restarts, say), within timeout.
func (b *bench) next(timeout time.Duration, kinds ...EventKind) Event {
	b.t.Helper()

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()

	for {
		select {
		case ev, ok := <-b.events:
			if !ok {
				b.t.Fatalf("client stopped while waiting for %v", kinds)
			}

			for _, k := range kinds {
				if ev.Kind == k {
					return ev
				}
			}

			b.t.Logf("skipping event %s while waiting for %v", ev, kinds)
		case <-deadline.C:
			b.t.Fatalf("no %v event within %s; dnsmasq log:\n%s", kinds, timeout, b.server.log)
		}
	}
}

// inRange reports whether a is within first..last.
func inRange(a netip.Addr, first, last string) bool {
	return a.Compare(netip.MustParseAddr(first)) >= 0 && a.Compare(netip.MustParseAddr(last)) <= 0
}

func (e Event) mustLease(t *testing.T) *Lease {
	t.Helper()

	if e.Lease == nil {
		t.Fatalf("%s event without a lease", e.Kind)
	}

	return e.Lease
}
