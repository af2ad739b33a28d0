package network_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/resources/config"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// testNS is a network namespace of the test's own, removed at cleanup.
type testNS struct {
	t    testing.TB
	name string
}

func newNS(t testing.TB) *testNS {
	t.Helper()

	if os.Geteuid() != 0 {
		t.Fatal("needs root for network namespaces; CI runs as root")
	}

	b := make([]byte, 3)
	rand.Read(b) //nolint:errcheck // never fails

	n := &testNS{t: t, name: "tbnw-" + hex.EncodeToString(b)}

	if out, err := exec.Command("ip", "netns", "add", n.name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}

	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.name).Run() }) //nolint:errcheck // best effort

	n.ip("link", "set", "lo", "up")

	return n
}

func (n *testNS) path() string { return "/run/netns/" + n.name }

// ip runs `ip -n NS args...` and fails the test on error.
func (n *testNS) ip(args ...string) string {
	n.t.Helper()

	out, err := exec.Command("ip", append([]string{"-n", n.name}, args...)...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("ip -n %s %s: %v: %s", n.name, strings.Join(args, " "), err, out)
	}

	return string(out)
}

// veth adds a veth pair inside the namespace; peer stays up so name has
// a carrier.
func (n *testNS) veth(name, peer string) {
	n.t.Helper()
	n.ip("link", "add", name, "type", "veth", "peer", "name", peer)
	n.ip("link", "set", peer, "up")
}

// handle is a netlink handle inside the namespace, for checking the kernel.
func (n *testNS) handle() *netlink.Handle {
	n.t.Helper()

	ns, err := netns.GetFromPath(n.path())
	if err != nil {
		n.t.Fatal(err)
	}
	defer ns.Close() //nolint:errcheck

	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		n.t.Fatal(err)
	}

	n.t.Cleanup(h.Close)

	return h
}

// node is networkd's controllers on a private bus, managing ns.
type node struct {
	t     testing.TB
	store *bus.Store
	etc   string
	host  string
}

func startNode(t testing.TB, ns *testNS, tweak func(*network.Options)) *node {
	t.Helper()

	dir := t.TempDir()
	nd := &node{t: t, store: bus.NewStore(bus.StoreOptions{}), etc: filepath.Join(dir, "etc"), host: filepath.Join(dir, "etc", "hostname")}

	opts := network.Options{
		NetNSPath: ns.path(), NodeID: "test-node", EtcDir: nd.etc, Hostname: network.FileHostname{Path: nd.host},
	}
	if tweak != nil {
		tweak(&opts)
	}

	rt := bus.NewRuntime(nd.store, bus.RuntimeOptions{BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
	if err := network.Register(rt, opts); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		rt.Run(ctx) //nolint:errcheck // nil on cancel
	}()

	t.Cleanup(func() {
		cancel()
		<-done
	})

	return nd
}

// setConfig publishes cfg as the machine config, as machined does.
func (nd *node) setConfig(n *configs.NetworkConfig) {
	nd.t.Helper()
	nd.setConfigOf("", n)
}

// setConfigOf is setConfig for a machine of type typ.
func (nd *node) setConfigOf(typ string, n *configs.NetworkConfig) {
	nd.t.Helper()

	cfg := &configs.Config{Version: "v1alpha1", Machine: &configs.MachineConfig{Type: typ, Network: n}}
	mc := bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg})

	if _, err := nd.store.Modify(context.Background(), mc, func(r bus.Resource) error {
		r.(*config.MachineConfig).TypedSpec().Config = cfg
		return nil
	}, bus.WithOwner("machined")); err != nil {
		nd.t.Fatal(err)
	}
}

// waitFor watches a kind until cond holds for the resources of it, or
// fails the test at the deadline. It returns how long that took.
func (nd *node) waitFor(typ string, what string, cond func([]bus.Resource) bool) time.Duration {
	nd.t.Helper()

	start := time.Now()
	k := bus.Kind{Namespace: networkres.Namespace, Type: typ}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	w, err := nd.store.WatchKind(ctx, k)
	if err != nil {
		nd.t.Fatal(err)
	}
	defer w.Close()

	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				items, _ := nd.store.List(context.Background(), k) //nolint:errcheck
				nd.t.Fatalf("timed out waiting for %s; %s now: %s", what, typ, dump(items))
			}
		case <-ctx.Done():
		}

		items, err := nd.store.List(context.Background(), k)
		if err != nil {
			nd.t.Fatal(err)
		}

		if cond(items) {
			return time.Since(start)
		}
	}
}

func dump(items []bus.Resource) string {
	var b strings.Builder
	for _, r := range items {
		b.WriteString("\n  " + r.Metadata().ID)
		if is, ok := r.(*networkres.ApplyIssue); ok {
			b.WriteString(": " + is.TypedSpec().Message)
		}
	}

	return b.String()
}

func ids(items []bus.Resource) map[string]bus.Resource {
	m := map[string]bus.Resource{}
	for _, r := range items {
		m[r.Metadata().ID] = r
	}

	return m
}

// hasIDs is a waitFor condition: every id is present (or, with absent,
// none is).
func hasIDs(absent bool, want ...string) func([]bus.Resource) bool {
	return func(items []bus.Resource) bool {
		m := ids(items)
		for _, id := range want {
			if _, ok := m[id]; ok == absent {
				return false
			}
		}

		return true
	}
}

// issue waits for an ApplyIssue whose message contains text and returns it.
func (nd *node) issue(id, text string) networkres.ApplyIssueSpec {
	nd.t.Helper()

	var got networkres.ApplyIssueSpec

	nd.waitFor(networkres.ApplyIssueType, "issue "+id, func(items []bus.Resource) bool {
		r, ok := ids(items)[id]
		if !ok {
			return false
		}

		got = *r.(*networkres.ApplyIssue).TypedSpec()

		return strings.Contains(got.Message, text)
	})

	return got
}

// kernelWatch is a netlink address and route subscription inside a test
// namespace.
type kernelWatch struct {
	addrs  chan netlink.AddrUpdate
	routes chan netlink.RouteUpdate
}

func (n *testNS) kernelEvents() *kernelWatch {
	n.t.Helper()

	ns, err := netns.GetFromPath(n.path())
	if err != nil {
		n.t.Fatal(err)
	}
	defer ns.Close() //nolint:errcheck

	w := &kernelWatch{addrs: make(chan netlink.AddrUpdate, 64), routes: make(chan netlink.RouteUpdate, 64)}
	done := make(chan struct{})

	if err := netlink.AddrSubscribeWithOptions(w.addrs, done, netlink.AddrSubscribeOptions{Namespace: &ns}); err != nil {
		n.t.Fatal(err)
	}

	if err := netlink.RouteSubscribeWithOptions(w.routes, done, netlink.RouteSubscribeOptions{Namespace: &ns}); err != nil {
		n.t.Fatal(err)
	}

	n.t.Cleanup(func() { close(done) })

	return w
}

// waitNew waits until the address addr and the route to dst have been
// added, failing after timeout; it returns how long that took.
func (w *kernelWatch) waitNew(t testing.TB, addr, dst string, timeout time.Duration) time.Duration {
	t.Helper()

	start := time.Now()
	deadline := time.After(timeout)

	for gotAddr, gotRoute := false, false; !gotAddr || !gotRoute; {
		select {
		case u := <-w.addrs:
			gotAddr = gotAddr || (u.NewAddr && u.LinkAddress.String() == addr)
		case u := <-w.routes:
			gotRoute = gotRoute || (u.Type == unix.RTM_NEWROUTE && u.Dst != nil && u.Dst.String() == dst)
		case <-deadline:
			t.Fatalf("%s and the route to %s were not both added within %s", addr, dst, timeout)
		}
	}

	return time.Since(start)
}
