package trustd

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/etcd/etcdtest"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// watchWithin bounds how long a change may take to reach a watching
// worker; it comes in milliseconds.
const watchWithin = 5 * time.Second

// watching runs a worker's Registry.Watch and keeps its latest list.
type watching struct {
	mu     sync.Mutex
	latest []string // "id/first address", sorted
	signal chan struct{}
	done   chan struct{} // closed when Watch returned, with err
	err    error
}

func startWatching(tb testing.TB, reg *Registry) *watching {
	tb.Helper()

	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{signal: make(chan struct{}, 1), done: make(chan struct{})}

	go func() {
		defer close(w.done)

		w.err = reg.Watch(ctx, func(list []cluster.AffiliateSpec) {
			ids := []string{}
			for _, a := range list {
				ids = append(ids, a.NodeID+"/"+a.Addresses[0].String())
			}

			slices.Sort(ids)

			w.mu.Lock()
			w.latest = ids
			w.mu.Unlock()

			select {
			case w.signal <- struct{}{}:
			default:
			}
		})
	}()

	tb.Cleanup(func() {
		cancel()
		<-w.done

		// Tests that break the watch check its error themselves.
		if w.err != nil && !strings.Contains(w.err.Error(), "Unavailable") {
			tb.Errorf("Watch: %v", w.err)
		}
	})

	return w
}

// wait waits until the worker's latest list is want.
func (w *watching) wait(tb testing.TB, want ...string) {
	tb.Helper()

	slices.Sort(want)

	deadline := time.NewTimer(watchWithin)
	defer deadline.Stop()

	for {
		w.mu.Lock()
		got := w.latest
		w.mu.Unlock()

		if slices.Equal(got, want) {
			return
		}

		select {
		case <-w.signal:
		case <-w.done:
			tb.Fatalf("the watch ended (%v) at %v, want %v", w.err, got, want)
		case <-deadline.C:
			tb.Fatalf("the worker sees %v after %v, want %v", got, watchWithin, want)
		}
	}
}

func affiliate(id, typ, addr string) cluster.AffiliateSpec {
	return cluster.AffiliateSpec{NodeID: id, Hostname: id, MachineType: typ, Addresses: []netip.Addr{netip.MustParseAddr(addr)}}
}

// TestWatchAffiliates: a worker watching through trustd sees the cluster,
// then every join, change and leave, until the control plane's registry
// goes away.
func TestWatchAffiliates(t *testing.T) {
	member := etcdtest.Start(t)
	reg := discovery.EtcdRegistry{Client: member.Server.Client()}
	ts := startServerWith(t, nil, reg)
	ctx := testContext(t)

	if err := reg.Publish(ctx, affiliate("cpnode1", "controlplane", "10.5.0.2")); err != nil {
		t.Fatal(err)
	}

	ca, _, _ := cas(t)

	// The first endpoint is down: the watch goes on to the next.
	wr := &Registry{Endpoints: []string{closedAddr(t), ts.addr}, Token: testToken, Trust: trustPool(t, ca)}
	w := startWatching(t, wr)
	w.wait(t, "cpnode1/10.5.0.2")

	// A second worker shares the control plane's watch.
	other := startWatching(t, &Registry{Endpoints: []string{ts.addr}, Token: testToken, Trust: trustPool(t, ca)})

	for _, step := range []struct {
		name string
		act  func() error
		want []string
	}{
		{"a worker joins", func() error { return wr.Publish(ctx, affiliate("worker1", "worker", "10.5.0.5")) },
			[]string{"cpnode1/10.5.0.2", "worker1/10.5.0.5"}},
		{"a control plane moves", func() error { return reg.Publish(ctx, affiliate("cpnode1", "controlplane", "10.5.0.12")) },
			[]string{"cpnode1/10.5.0.12", "worker1/10.5.0.5"}},
		{"the worker leaves", func() error { return wr.Remove(ctx, "worker1") },
			[]string{"cpnode1/10.5.0.12"}},
	} {
		if err := step.act(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}

		w.wait(t, step.want...)
		other.wait(t, step.want...)
	}

	// The control plane's etcd stops: the stream ends, so the worker
	// knows its list is stale and polls until it can watch again.
	member.Server.Close()

	select {
	case <-w.done:
		if status.Code(w.err) != codes.Unavailable {
			t.Fatalf("the watch ended with %v, want Unavailable", w.err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the watch outlived the registry")
	}
}

// TestWatchAffiliatesServerStops: a stopping trustd ends its watch streams
// rather than wait its grace period for them.
func TestWatchAffiliatesServerStops(t *testing.T) {
	member := etcdtest.Start(t)
	reg := discovery.EtcdRegistry{Client: member.Server.Client()}
	ts := startServerWith(t, nil, reg)

	if err := reg.Publish(testContext(t), affiliate("cpnode1", "controlplane", "10.5.0.2")); err != nil {
		t.Fatal(err)
	}

	ca, _, _ := cas(t)
	w := startWatching(t, &Registry{Endpoints: []string{ts.addr}, Token: testToken, Trust: trustPool(t, ca)})
	w.wait(t, "cpnode1/10.5.0.2")

	start := time.Now()
	ts.stop()

	if took := time.Since(start); took >= stopGrace {
		t.Fatalf("trustd took %v to stop with a watcher: it waited for the stream", took)
	}

	select {
	case <-w.done:
		if status.Code(w.err) != codes.Unavailable {
			t.Fatalf("the watch ended with %v, want Unavailable", w.err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the watch outlived trustd")
	}
}

// TestWatchAffiliatesRefused: the stream checks the token exactly as
// Affiliates does, and refuses what it cannot serve.
func TestWatchAffiliatesRefused(t *testing.T) {
	member := etcdtest.Start(t)
	reg := discovery.EtcdRegistry{Client: member.Server.Client()}
	ts := startServerWith(t, nil, reg)
	client := rawClient(t, ts.addr)

	for _, tc := range []struct {
		name   string
		tokens []string
	}{
		{"no token", nil},
		{"wrong token", []string{"wrong.token"}},
		{"two tokens", []string{testToken, testToken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			for _, tok := range tc.tokens {
				ctx = metadata.AppendToOutgoingContext(ctx, tokenKey, tok)
			}

			_, unaryErr := client.Affiliates(ctx, &security.AffiliatesRequest{Self: &security.Affiliate{NodeId: "w1", Hostname: "w-1", MachineType: "worker"}})

			streamErr := firstMessage(ctx, client)

			if status.Code(unaryErr) != codes.Unauthenticated || status.Convert(streamErr).Proto().String() != status.Convert(unaryErr).Proto().String() {
				t.Fatalf("the stream got %v, Affiliates %v: want the same Unauthenticated", streamErr, unaryErr)
			}
		})
	}

	ctx := metadata.AppendToOutgoingContext(testContext(t), tokenKey, testToken)

	// A node whose trustd serves no discovery.
	if err := firstMessage(ctx, rawClient(t, startServer(t, nil).addr)); status.Code(err) != codes.Unimplemented {
		t.Fatalf("no registry: %v", err)
	}

	// A registry that cannot watch.
	if err := firstMessage(ctx, rawClient(t, startServerWith(t, nil, listOnly{reg}).addr)); status.Code(err) != codes.Unimplemented {
		t.Fatalf("a registry without watch: %v", err)
	}

	// Watchers past the cap poll instead.
	full := startServerTuned(t, nil, reg, func(s *Server) { s.watchSlots = make(chan struct{}, 1) })
	fullClient := rawClient(t, full.addr)

	held, err := fullClient.WatchAffiliates(ctx, &security.WatchAffiliatesRequest{})
	if err == nil {
		_, err = held.Recv()
	}

	if err != nil {
		t.Fatalf("the first watcher: %v", err)
	}

	if err := firstMessage(ctx, fullClient); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("past the cap: %v", err)
	}

	// The worker's side says which token it was.
	ca, _, _ := cas(t)
	bad := &Registry{Endpoints: []string{ts.addr}, Token: "wrong.token", Trust: trustPool(t, ca)}

	if err := bad.Watch(testContext(t), func([]cluster.AffiliateSpec) { t.Error("a list for a wrong token") }); err == nil || !strings.Contains(err.Error(), "wrong token") {
		t.Fatalf("wrong token: %v", err)
	}
}

// firstMessage opens a watch and reads its first message.
func firstMessage(ctx context.Context, client security.SecurityServiceClient) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	stream, err := client.WatchAffiliates(ctx, &security.WatchAffiliatesRequest{})
	if err != nil {
		return err
	}

	_, err = stream.Recv()

	return err
}

// listOnly hides a registry's Watch and Remove.
type listOnly struct{ discovery.Registry }

func TestAffiliatesLeave(t *testing.T) {
	member := etcdtest.Start(t)
	reg := discovery.EtcdRegistry{Client: member.Server.Client()}
	ctx := metadata.AppendToOutgoingContext(testContext(t), tokenKey, testToken)

	if err := reg.Publish(ctx, affiliate("worker1", "worker", "10.5.0.5")); err != nil {
		t.Fatal(err)
	}

	client := rawClient(t, startServerWith(t, nil, reg).addr)

	for _, tc := range []struct {
		name   string
		client security.SecurityServiceClient
		id     string
		want   codes.Code
		left   int
	}{
		{"bad node id", client, "../etc", codes.InvalidArgument, 1},
		{"a registry that cannot delete", rawClient(t, startServerWith(t, nil, listOnly{reg}).addr), "worker1", codes.Unimplemented, 1},
		{"leave", client, "worker1", codes.OK, 0},
		{"leave again", client, "worker1", codes.OK, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.client.Affiliates(ctx, &security.AffiliatesRequest{Self: &security.Affiliate{NodeId: tc.id}, Leave: true})
			if status.Code(err) != tc.want {
				t.Fatalf("got %v, want %v", err, tc.want)
			}

			if all, err := reg.List(ctx); err != nil || len(all) != tc.left {
				t.Fatalf("the registry holds %v (%v), want %d records", all, err, tc.left)
			}
		})
	}
}

// BenchmarkWatchAffiliates times a record published on the control plane
// reaching a worker that watches through trustd.
func BenchmarkWatchAffiliates(b *testing.B) {
	member := etcdtest.Start(b)
	reg := discovery.EtcdRegistry{Client: member.Server.Client()}
	ts := startServerWith(b, nil, reg)
	ca, _, _ := cas(b)
	w := startWatching(b, &Registry{Endpoints: []string{ts.addr}, Token: testToken, Trust: trustPool(b, ca)})
	ctx := testContext(b)

	b.ResetTimer()

	for i := range b.N {
		addr := fmt.Sprintf("10.6.%d.%d", i/250%250, 2+i%250)

		if err := reg.Publish(ctx, affiliate("cpnode1", "controlplane", addr)); err != nil {
			b.Fatal(err)
		}

		w.wait(b, "cpnode1/"+addr)
	}
}
