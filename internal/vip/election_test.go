package vip_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/talosbox/talosbox/internal/etcd/etcdtest"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/vip"
)

const testTTL = 2 * time.Second

// candidate is one node's operator, with a client of its own that the
// test can cut like a crash would.
type candidate struct {
	name   string
	op     *vip.Operator
	cli    *clientv3.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// ownership tracks how many candidates hold the IP, exactly, from the
// operators' own transitions.
type ownership struct {
	mu      sync.Mutex
	owners  map[string]bool
	maxSeen int
	changed chan struct{}
}

func (o *ownership) set(name string, owner bool) {
	o.mu.Lock()
	defer o.mu.Unlock()

	o.owners[name] = owner

	n := 0

	for _, v := range o.owners {
		if v {
			n++
		}
	}

	o.maxSeen = max(o.maxSeen, n)

	select {
	case o.changed <- struct{}{}:
	default:
	}
}

func (o *ownership) current() []string {
	o.mu.Lock()
	defer o.mu.Unlock()

	var out []string

	for k, v := range o.owners {
		if v {
			out = append(out, k)
		}
	}

	return out
}

// waitOwner waits for exactly one owner other than not, and returns it.
func (o *ownership) waitOwner(t *testing.T, not string, deadline time.Duration) (string, time.Duration) {
	t.Helper()

	start := time.Now()
	timer := time.NewTimer(deadline)

	defer timer.Stop()

	for {
		if cur := o.current(); len(cur) == 1 && cur[0] != not {
			return cur[0], time.Since(start)
		}

		select {
		case <-o.changed:
		case <-timer.C:
			t.Fatalf("no new owner within %v (owners now %v)", deadline, o.current())
		}
	}
}

func TestElectionFailover(t *testing.T) {
	member := etcdtest.Start(t)

	spec := networkres.OperatorSpecSpec{Operator: networkres.OperatorVIP, LinkName: "eth0", VIP: networkres.VIPOperatorSpec{IP: netip.MustParseAddr("10.5.0.100")}}
	own := &ownership{owners: map[string]bool{}, changed: make(chan struct{}, 1)}
	cands := map[string]*candidate{}

	for _, name := range []string{"cp1", "cp2", "cp3"} {
		cli := member.Client(t)

		gone := make(chan struct{})

		op, err := vip.New(vip.Options{
			Spec: spec, Candidate: name, TTL: testTTL,
			Client: func(context.Context) (*clientv3.Client, <-chan struct{}, error) { return cli, gone, nil },
			// Nothing is put on a link here: the address is "gone" at once.
			HasAddress: func(string, netip.Addr) bool { return false },
			Announce:   func(string, netip.Addr) error { return nil },
			OnChange:   func(owner bool) { own.set(name, owner) },
		})
		if err != nil {
			t.Fatal(err)
		}

		ctx, cancel := context.WithCancel(context.Background())
		c := &candidate{name: name, op: op, cli: cli, cancel: cancel, done: make(chan struct{})}
		cands[name] = c

		go func() {
			defer close(c.done)
			op.Run(ctx, func() {})
		}()

		t.Cleanup(func() { cancel(); <-c.done })
	}

	first, _ := own.waitOwner(t, "", 10*time.Second)

	if specs := cands[first].op.AddressSpecs(); len(specs) != 1 || specs[0].Address.String() != "10.5.0.100/32" || specs[0].LinkName != "eth0" {
		t.Fatalf("owner %s publishes %+v", first, specs)
	}

	for name, c := range cands {
		if name != first && len(c.op.AddressSpecs()) != 0 {
			t.Fatalf("%s publishes the IP while %s owns it", name, first)
		}
	}

	// A crash: the owner's connection to etcd is cut, its lease is left to
	// expire. The next owner must wait out the lease, and no later than
	// TTL + 2 s.
	crashed := time.Now()
	cands[first].cli.Close()

	second, took := own.waitOwner(t, first, testTTL+5*time.Second)
	t.Logf("failover after a crash: %s -> %s in %v (TTL %v)", first, second, took, testTTL)

	if since := time.Since(crashed); since > testTTL+2*time.Second {
		t.Errorf("failover took %v, more than TTL %v + 2s", since, testTTL)
	}

	// A clean stop resigns: the next owner takes over without waiting for
	// the lease.
	stopped := time.Now()
	cands[second].cancel()

	third, _ := own.waitOwner(t, second, testTTL+5*time.Second)
	if took := time.Since(stopped); took > testTTL {
		t.Errorf("failover after a resignation took %v, as long as a lease expiry", took)
	}

	if third == first {
		t.Fatalf("the crashed node %s owns the IP again", first)
	}

	own.mu.Lock()
	defer own.mu.Unlock()

	if own.maxSeen != 1 {
		t.Fatalf("%d nodes held the IP at once", own.maxSeen)
	}
}

func TestNewRefusesBadSpecs(t *testing.T) {
	client := func(context.Context) (*clientv3.Client, <-chan struct{}, error) { return nil, nil, nil }
	good := networkres.OperatorSpecSpec{Operator: networkres.OperatorVIP, LinkName: "eth0", VIP: networkres.VIPOperatorSpec{IP: netip.MustParseAddr("10.5.0.100")}}

	for _, tc := range []struct {
		name string
		opts vip.Options
	}{
		{"no ip", vip.Options{Spec: networkres.OperatorSpecSpec{Operator: networkres.OperatorVIP, LinkName: "eth0"}, Client: client}},
		{"dhcp spec", vip.Options{Spec: networkres.OperatorSpecSpec{Operator: networkres.OperatorDHCP4, LinkName: "eth0"}, Client: client}},
		{"no client", vip.Options{Spec: good}},
		{"ttl below etcd's minimum", vip.Options{Spec: good, Client: client, TTL: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := vip.New(tc.opts); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
