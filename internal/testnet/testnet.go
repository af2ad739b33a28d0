// Package testnet builds small real networks for tests: a hub network
// namespace holding a bridge, and one namespace per host joined to it by a
// veth pair, on 10.5.0.0/24 (the hub is .1, hosts .2 upwards). Everything
// lives in namespaces the test creates, so nothing touches the host's own
// network, and it is all removed at cleanup. It needs root and iproute2.
package testnet

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Net is one test network.
type Net struct {
	// Hub is the namespace with the bridge; tools run there reach every host.
	Hub   string
	Hosts []Host
}

// Host is one namespace on the network.
type Host struct {
	NS   string
	Addr netip.Addr
}

// New creates a network with n hosts and removes it when the test ends.
func New(t testing.TB, n int) *Net {
	t.Helper()

	if os.Geteuid() != 0 {
		t.Fatal("testnet needs root (network namespaces); CI runs as root")
	}

	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("testnet needs iproute2's ip (scripts/install-deps.sh installs it)")
	}

	suffix := make([]byte, 3)
	rand.Read(suffix) //nolint:errcheck // never fails

	id := hex.EncodeToString(suffix)
	nw := &Net{Hub: "tbhub-" + id}

	t.Cleanup(func() {
		for _, h := range nw.Hosts {
			exec.Command("ip", "netns", "del", h.NS).Run() //nolint:errcheck // best effort
		}

		exec.Command("ip", "netns", "del", nw.Hub).Run() //nolint:errcheck
	})

	run := func(args ...string) {
		t.Helper()

		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}

	run("netns", "add", nw.Hub)
	run("-n", nw.Hub, "link", "set", "lo", "up")
	run("-n", nw.Hub, "link", "add", "br0", "type", "bridge")
	run("-n", nw.Hub, "addr", "add", "10.5.0.1/24", "dev", "br0")
	run("-n", nw.Hub, "link", "set", "br0", "up")

	for i := range n {
		h := Host{NS: fmt.Sprintf("tbh%d-%s", i, id), Addr: netip.AddrFrom4([4]byte{10, 5, 0, byte(2 + i)})}
		nw.Hosts = append(nw.Hosts, h)
		veth := fmt.Sprintf("v%d", i)

		run("netns", "add", h.NS)
		run("-n", h.NS, "link", "set", "lo", "up")
		run("-n", nw.Hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
		run("-n", nw.Hub, "link", "set", veth, "master", "br0", "up")
		run("-n", h.NS, "addr", "add", h.Addr.String()+"/24", "dev", "eth0")
		run("-n", h.NS, "link", "set", "eth0", "up")
		run("-n", h.NS, "route", "add", "default", "via", "10.5.0.1")
	}

	return nw
}

// Command prepares name args... to run inside namespace ns.
func Command(ns, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// InNS runs fn on an OS thread that has joined namespace ns, so sockets fn
// opens live there. The thread is never returned to the Go scheduler: it
// exits with fn, taking the namespace with it.
func InNS(ns string, fn func() error) error {
	errc := make(chan error, 1)

	go func() {
		runtime.LockOSThread() // deliberately never unlocked: the thread dies with us

		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()

		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("join netns %s: %w", ns, err)
			return
		}

		errc <- fn()
	}()

	return <-errc
}

// Listen opens a listener inside namespace ns.
func Listen(ns, network, addr string) (net.Listener, error) {
	var l net.Listener

	err := InNS(ns, func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})

	return l, err
}
