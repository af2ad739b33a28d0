package discovery_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/etcd/etcdtest"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// converge is how long a change may take to reach every node through the
// watch: the goal is about 2 s on a real cluster; this leaves room for a
// loaded test machine and is still far below any polling interval here.
const converge = 5 * time.Second

// TestControllersWatch: two nodes share an etcd registry and poll it once
// an hour. Once they have met, nothing changes on A's bus, so whatever A
// learns after that comes through its watch.
func TestControllersWatch(t *testing.T) {
	member := etcdtest.Start(t)
	cli := member.Server.Client()
	reg := discovery.EtcdRegistry{Client: cli, TTL: time.Minute}
	leased := discovery.EtcdRegistry{Client: cli, TTL: 3 * time.Second}
	opts := nodeOptions{registry: func(*configs.Config) discovery.Registry { return reg }, interval: time.Hour}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	a, stopA := startNode(t, "node-a", "10.5.0.2", opts)
	b, stopB := startNode(t, "node-b", "10.5.0.3", opts)

	for _, step := range []struct {
		name   string
		act    func() error
		within time.Duration
		want   []string
	}{
		{"each sees the other", func() error { return nil }, converge,
			[]string{"node-a=10.5.0.2", "node-b=10.5.0.3"}},
		{"a new record appears", func() error { return reg.Publish(ctx, record("node-c", "10.5.0.4")) }, converge,
			[]string{"node-a=10.5.0.2", "node-b=10.5.0.3", "node-c=10.5.0.4"}},
		{"a deleted record disappears", func() error { return reg.Remove(ctx, "node-c") }, converge,
			[]string{"node-a=10.5.0.2", "node-b=10.5.0.3"}},
		{"a new address is published at once", func() error { b.setAddress(t, "10.5.0.13"); return nil }, converge,
			[]string{"node-a=10.5.0.2", "node-b=10.5.0.13"}},
		{"a leased record appears", func() error { return leased.Publish(ctx, record("node-d", "10.5.0.5")) }, converge,
			[]string{"node-a=10.5.0.2", "node-b=10.5.0.13", "node-d=10.5.0.5"}},
		// etcd checks leases twice a second and then deletes the keys.
		{"an expired record disappears", func() error { return nil }, 3*time.Second + converge,
			[]string{"node-a=10.5.0.2", "node-b=10.5.0.13"}},
	} {
		if err := step.act(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}

		a.waitMembers(t, step.within, step.want...)
		b.waitMembers(t, step.within, step.want...)
	}

	// A control plane's record says where its API server listens (the
	// default port: its config sets none), for KubePrism on other nodes.
	list, err := reg.List(ctx)
	if i := slices.IndexFunc(list, func(a cluster.AffiliateSpec) bool { return a.NodeID == "node-a" }); err != nil || i < 0 ||
		list[i].ControlPlane == nil || list[i].ControlPlane.APIServerPort != 6443 {
		t.Fatalf("node-a's record %+v (%v): want controlPlane.apiServerPort 6443", list, err)
	}

	// B's own record is deleted under it: B puts it back at once, an
	// hour before its next publish.
	if err := reg.Remove(ctx, "node-b"); err != nil {
		t.Fatal(err)
	}

	waitFor(t, converge, "node-b to publish its deleted record again", func() bool {
		list, err := reg.List(ctx)
		return err == nil && slices.ContainsFunc(list, func(a cluster.AffiliateSpec) bool { return a.NodeID == "node-b" })
	})

	if len(ours()) == 0 {
		t.Fatal("no goroutine of the nodes found: the leak check below would prove nothing")
	}

	stopA()
	stopB()

	// The watches, their etcd streams and the controllers are gone.
	waitFor(t, 10*time.Second, "the nodes' goroutines to end", func() bool { return len(ours()) == 0 })
}

// TestControllerPollsWhenTheWatchBreaks: a registry whose watch never
// holds still serves its list at every interval.
func TestControllerPollsWhenTheWatchBreaks(t *testing.T) {
	reg := newMemRegistry(errors.New("watch refused"))
	opts := nodeOptions{registry: func(*configs.Config) discovery.Registry { return reg }, interval: 100 * time.Millisecond}

	a, _ := startNode(t, "node-a", "10.5.0.2", opts)
	a.waitMembers(t, converge, "node-a=10.5.0.2")

	if err := reg.Publish(context.Background(), record("node-c", "10.5.0.4")); err != nil {
		t.Fatal(err)
	}

	a.waitMembers(t, converge, "node-a=10.5.0.2", "node-c=10.5.0.4")
}

// countingRegistry counts the watches of its registry.
type countingRegistry struct {
	discovery.EtcdRegistry
	c *watchCount
}

type watchCount struct{ active, max, started atomic.Int32 }

func (r countingRegistry) Watch(ctx context.Context, changed func([]cluster.AffiliateSpec)) error {
	r.c.started.Add(1)

	n := r.c.active.Add(1)
	defer r.c.active.Add(-1)

	for {
		m := r.c.max.Load()
		if n <= m || r.c.max.CompareAndSwap(m, n) {
			break
		}
	}

	return r.EtcdRegistry.Watch(ctx, changed)
}

// TestControllerOneWatchPerRegistry: refreshes reuse the watch; a new
// registry replaces it; none outlives the controller.
func TestControllerOneWatchPerRegistry(t *testing.T) {
	member := etcdtest.Start(t)
	cli := member.Server.Client()
	count := &watchCount{}
	regs := []discovery.Registry{
		countingRegistry{discovery.EtcdRegistry{Client: cli, TTL: time.Minute}, count},
		countingRegistry{discovery.EtcdRegistry{Client: cli, TTL: 2 * time.Minute}, count},
	}

	var (
		mu      sync.Mutex
		current = 0
		changed = make(chan struct{})
	)

	opts := nodeOptions{
		registry: func(*configs.Config) discovery.Registry {
			mu.Lock()
			defer mu.Unlock()

			return regs[current]
		},
		registryChanged: func() <-chan struct{} {
			mu.Lock()
			defer mu.Unlock()

			return changed
		},
		interval: time.Hour,
	}

	a, stop := startNode(t, "node-a", "10.5.0.2", opts)
	a.waitMembers(t, converge, "node-a=10.5.0.2")

	// Every address change is a refresh with the same registry.
	for _, addr := range []string{"10.5.0.12", "10.5.0.22", "10.5.0.32"} {
		a.setAddress(t, addr)
		a.waitMembers(t, converge, "node-a="+addr)
	}

	if n := count.started.Load(); n != 1 {
		t.Fatalf("%d watches for one registry", n)
	}

	// The registry changes with no input changing: RegistryChanged wakes
	// the controller, which swaps the watch.
	mu.Lock()
	current = 1
	close(changed)
	changed = make(chan struct{})
	mu.Unlock()

	waitFor(t, converge, "the second registry's watch", func() bool { return count.started.Load() == 2 })

	if err := regs[1].Publish(context.Background(), record("node-c", "10.5.0.4")); err != nil {
		t.Fatal(err)
	}

	a.waitMembers(t, converge, "node-a=10.5.0.32", "node-c=10.5.0.4")

	stop()

	if n, m := count.active.Load(), count.max.Load(); n != 0 || m != 1 {
		t.Fatalf("after the controller stopped: %d watches left, %d at most at once; want 0 and 1", n, m)
	}
}

// ours are the stacks of the goroutines that discovery runs: controllers,
// their buses, watches and the etcd watch streams they open. etcd starts
// goroutines of its own lazily, so a plain count would not do.
func ours() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}

		buf = make([]byte, 2*len(buf))
	}

	var out []string

	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, mark := range []string{"talosbox/internal/discovery.", "talosbox/internal/bus.", "etcd/client/v3.(*watch", "v3rpc.(*serverWatchStream)"} {
			if strings.Contains(g, mark) {
				out = append(out, g)
				break
			}
		}
	}

	return out
}
