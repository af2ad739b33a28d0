package discovery_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/config"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// node is one discovery controller on a bus of its own, as on a machine.
type node struct {
	id    string
	store *bus.Store
}

// nodeOptions vary startNode's controller.
type nodeOptions struct {
	registry        func(*configs.Config) discovery.Registry
	registryChanged func() <-chan struct{}
	interval        time.Duration
}

// startNode runs a controller for node id (hostname id, address addr)
// until the returned stop, or the test's end.
func startNode(tb testing.TB, id, addr string, opts nodeOptions) (*node, func()) {
	tb.Helper()

	n := &node{id: id, store: bus.NewStore(bus.StoreOptions{})}
	rt := bus.NewRuntime(n.store, bus.RuntimeOptions{})

	if err := rt.Register(&discovery.Controller{
		Registry: opts.registry, RegistryChanged: opts.registryChanged,
		NodeID: func() (string, error) { return id, nil }, Interval: opts.interval,
	}); err != nil {
		tb.Fatal(err)
	}

	cfg := &configs.Config{Machine: &configs.MachineConfig{Type: "controlplane", Network: &configs.NetworkConfig{Hostname: id}}}
	n.put(tb, bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg}))
	n.setAddress(tb, addr)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		rt.Run(ctx) //nolint:errcheck // ends with ctx
	}()

	// Stopping twice is fine: done stays closed.
	stop := func() { cancel(); <-done }
	tb.Cleanup(stop)

	return n, stop
}

func put[S any](tb testing.TB, s *bus.Store, r *bus.Typed[S]) {
	tb.Helper()

	spec := *r.TypedSpec()

	if _, err := s.Modify(context.Background(), r, func(res bus.Resource) error {
		*res.(*bus.Typed[S]).TypedSpec() = spec
		return nil
	}, bus.WithOwner("test")); err != nil {
		tb.Fatal(err)
	}
}

func (n *node) put(tb testing.TB, r *bus.Typed[config.MachineConfigSpec]) { put(tb, n.store, r) }

// setAddress gives the node addr/24, as networkd would.
func (n *node) setAddress(tb testing.TB, addr string) {
	tb.Helper()

	p := netip.PrefixFrom(netip.MustParseAddr(addr), 24)
	put(tb, n.store, bus.NewTyped(networkres.Namespace, networkres.NodeAddressType, networkres.NodeAddressesCur, networkres.NodeAddressSpec{Addresses: []netip.Prefix{p}}))
}

// members is the node's Members as "id=addr,addr", sorted.
func (n *node) members(tb testing.TB) []string {
	tb.Helper()

	ms, err := bus.ListAs[*cluster.Member](context.Background(), n.store, bus.Kind{Namespace: cluster.Namespace, Type: cluster.MemberType})
	if err != nil {
		tb.Fatal(err)
	}

	out := make([]string, 0, len(ms))

	for _, m := range ms {
		var addrs []string
		for _, a := range m.TypedSpec().Addresses {
			addrs = append(addrs, a.String())
		}

		out = append(out, m.Metadata().ID+"="+strings.Join(addrs, ","))
	}

	slices.Sort(out)

	return out
}

// waitMembers waits, on the bus's events rather than by polling, until the
// node's Members are want, and fails after within.
func (n *node) waitMembers(tb testing.TB, within time.Duration, want ...string) {
	tb.Helper()

	slices.Sort(want)

	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()

	w, err := n.store.WatchKind(ctx, bus.Kind{Namespace: cluster.Namespace, Type: cluster.MemberType}, bus.WithQueue(1024))
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()

	for {
		got := n.members(tb)
		if slices.Equal(got, want) {
			return
		}

		select {
		case _, ok := <-w.Events():
			if !ok {
				tb.Fatalf("%s: Members %v after %v, want %v", n.id, n.members(tb), within, want)
			}
		case <-ctx.Done():
			tb.Fatalf("%s: Members %v after %v, want %v", n.id, got, within, want)
		}
	}
}

// record is an affiliate that is not a controller of the test.
func record(id, addr string) cluster.AffiliateSpec {
	return cluster.AffiliateSpec{NodeID: id, Hostname: id, Nodename: id, MachineType: "worker",
		OperatingSystem: discovery.OperatingSystem(), Addresses: []netip.Addr{netip.MustParseAddr(addr)}}
}

// waitFor waits until cond holds, checking on every tick of a short
// ticker, and fails after within.
func waitFor(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()

	deadline := time.NewTimer(within)
	defer deadline.Stop()

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()

	for !cond() {
		select {
		case <-deadline.C:
			tb.Fatalf("timed out after %v waiting for %s", within, what)
		case <-tick.C:
		}
	}
}

// memRegistry is an in-memory registry; its Watch fails with watchErr
// (when set) to stand for a watch that keeps breaking.
type memRegistry struct {
	s *memState
}

type memState struct {
	ch       chan map[string]cluster.AffiliateSpec // holds the records: a one-slot lock
	watchErr error
}

func newMemRegistry(watchErr error) memRegistry {
	st := &memState{ch: make(chan map[string]cluster.AffiliateSpec, 1), watchErr: watchErr}
	st.ch <- map[string]cluster.AffiliateSpec{}

	return memRegistry{s: st}
}

func (m memRegistry) Publish(_ context.Context, a cluster.AffiliateSpec) error {
	recs := <-m.s.ch
	recs[a.NodeID] = a
	m.s.ch <- recs

	return nil
}

func (m memRegistry) List(context.Context) ([]cluster.AffiliateSpec, error) {
	recs := <-m.s.ch
	defer func() { m.s.ch <- recs }()

	return slices.Collect(maps.Values(recs)), nil
}

func (m memRegistry) Watch(context.Context, func([]cluster.AffiliateSpec)) error {
	return fmt.Errorf("mem registry: %w", m.s.watchErr)
}
