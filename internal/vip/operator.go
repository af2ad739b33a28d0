// Package vip is the shared (virtual) IP of control-plane nodes, as a
// networkd operator: the nodes campaign in an etcd election on
// "talos:v1:vip:election:<ip>" under a lease, the winner publishes the IP
// as an operator-layer address on its link and announces it with a
// gratuitous ARP, and it gives the IP up when it loses the lease or stops.
package vip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// ElectionPrefix is the etcd key prefix of VIP elections (Talos's
// EtcdRootTalosKey "talos:v1").
const ElectionPrefix = "talos:v1:vip:election:"

// DefaultTTL is the election lease: how long a dead owner keeps the IP.
const DefaultTTL = 10 * time.Second

// Timing of the operator's own moves.
const (
	retryInterval = time.Second
	// releaseTimeout bounds waiting for the address to leave the link
	// before resigning on shutdown.
	releaseTimeout = 5 * time.Second
	announceCount  = 3
)

// Client hands the operator an etcd client once etcd runs on this node,
// and a channel closed when that member stops.
type Client func(ctx context.Context) (cli *clientv3.Client, gone <-chan struct{}, err error)

// Options configure an Operator.
type Options struct {
	Spec networkres.OperatorSpecSpec
	// Client waits for this node's etcd.
	Client Client
	// Candidate is the value this node campaigns with (its hostname).
	Candidate string
	// TTL is the election lease, DefaultTTL when zero.
	TTL time.Duration
	// Announce sends the gratuitous ARP; Announce (AF_PACKET) when nil.
	Announce func(link string, ip netip.Addr) error
	// HasAddress reports whether the link holds the IP, to resign only
	// once it is gone; the kernel's view (net.InterfaceByName) when nil.
	HasAddress func(link string, ip netip.Addr) bool
	// InNetNS runs fn inside the managed network namespace (networkd's).
	InNetNS func(fn func() error) error
	Logger  *slog.Logger
	// OnChange, when set, is told of every ownership change (tests).
	OnChange func(owner bool)
}

// Operator is one VIP's campaign on one node.
type Operator struct {
	opts Options

	mu    sync.Mutex
	owner bool
}

// New makes the operator for opts.Spec.
func New(opts Options) (*Operator, error) {
	if opts.Spec.Operator != networkres.OperatorVIP || !opts.Spec.VIP.IP.IsValid() {
		return nil, fmt.Errorf("vip: spec %s has no shared IP", opts.Spec.ID())
	}

	if opts.Client == nil {
		return nil, errors.New("vip: no etcd client source")
	}

	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}

	if opts.TTL < 2*time.Second {
		return nil, fmt.Errorf("vip: lease TTL %v is below etcd's minimum of 2s", opts.TTL)
	}

	if opts.Announce == nil {
		opts.Announce = Announce
	}

	if opts.HasAddress == nil {
		opts.HasAddress = linkHasAddress
	}

	if opts.InNetNS == nil {
		opts.InNetNS = func(fn func() error) error { return fn() }
	}

	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}

	return &Operator{opts: opts}, nil
}

// Key is the election key of the operator's IP.
func (o *Operator) Key() string { return ElectionPrefix + o.opts.Spec.VIP.IP.String() }

// Owner reports whether this node holds the IP now.
func (o *Operator) Owner() bool {
	o.mu.Lock()
	defer o.mu.Unlock()

	return o.owner
}

func (o *Operator) setOwner(owner bool, notify func()) {
	o.mu.Lock()
	changed := o.owner != owner
	o.owner = owner
	o.mu.Unlock()

	if !changed {
		return
	}

	notify()

	if o.opts.OnChange != nil {
		o.opts.OnChange(owner)
	}
}

// Run campaigns until ctx ends. Each term ends when the lease can no
// longer be trusted to be alive (etcd stopped, keepalives failing); the IP
// is dropped before the lease could have expired on the etcd side, so two
// nodes never hold it at once.
func (o *Operator) Run(ctx context.Context, notify func()) {
	ip, log := o.opts.Spec.VIP.IP, o.opts.Logger.With("vip", o.opts.Spec.VIP.IP, "link", o.opts.Spec.LinkName)

	for ctx.Err() == nil {
		t, err := o.campaign(ctx, log)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("vip campaign failed", "error", err)
			}

			if !wait(ctx, retryInterval) {
				return
			}

			continue
		}

		log.Info("acquired the shared IP", "ip", ip)
		o.setOwner(true, notify)

		go o.announce(ctx, log)

		reason := t.hold(ctx)

		o.setOwner(false, notify)

		if ctx.Err() != nil {
			// Resign only once networkd took the address off the link, so
			// the next owner never adds it while it is still here.
			go o.release(t, log)
			return
		}

		log.Warn("lost the shared IP", "ip", ip, "reason", reason)
		t.close()
	}
}

// announce sends a few gratuitous ARPs, spaced so a switch or neighbour
// that missed the first (the address may still be on its way to the
// link) catches a later one.
func (o *Operator) announce(ctx context.Context, log *slog.Logger) {
	if !o.opts.Spec.VIP.GratuitousARP {
		return
	}

	for i := range announceCount {
		if i > 0 && !wait(ctx, time.Second) {
			return
		}

		if !o.Owner() {
			return
		}

		err := o.opts.InNetNS(func() error { return o.opts.Announce(o.opts.Spec.LinkName, o.opts.Spec.VIP.IP) })
		if err != nil {
			log.Warn("gratuitous ARP failed", "error", err)
		}
	}
}

// release waits (bounded) until the address left the link, then resigns
// and revokes the lease so another node takes over at once.
func (o *Operator) release(t *term, log *slog.Logger) {
	deadline := time.Now().Add(releaseTimeout)

	for time.Now().Before(deadline) {
		var has bool

		_ = o.opts.InNetNS(func() error { has = o.opts.HasAddress(o.opts.Spec.LinkName, o.opts.Spec.VIP.IP); return nil }) //nolint:errcheck // only the answer matters

		if !has {
			break
		}

		time.Sleep(50 * time.Millisecond) // polling the kernel, bounded by the deadline
	}

	t.resign()
	log.Info("released the shared IP")
}

// AddressSpecs is the IP, as a host address, while this node owns it.
func (o *Operator) AddressSpecs() []networkres.AddressSpecSpec {
	if !o.Owner() {
		return nil
	}

	ip := o.opts.Spec.VIP.IP
	family := networkres.FamilyInet4

	if ip.Is6() {
		family = networkres.FamilyInet6
	}

	return []networkres.AddressSpecSpec{{Address: netip.PrefixFrom(ip, ip.BitLen()), LinkName: o.opts.Spec.LinkName, Family: family}}
}

func (o *Operator) RouteSpecs() []networkres.RouteSpecSpec           { return nil }
func (o *Operator) HostnameSpecs() []networkres.HostnameSpecSpec     { return nil }
func (o *Operator) ResolverSpecs() []networkres.ResolverSpecSpec     { return nil }
func (o *Operator) TimeServerSpecs() []networkres.TimeServerSpecSpec { return nil }

// linkHasAddress asks the kernel whether link holds ip.
func linkHasAddress(link string, ip netip.Addr) bool {
	ifi, err := net.InterfaceByName(link)
	if err != nil {
		return false
	}

	addrs, err := ifi.Addrs()
	if err != nil {
		return false
	}

	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if got, ok := netip.AddrFromSlice(n.IP); ok && got.Unmap() == ip {
				return true
			}
		}
	}

	return false
}

// wait sleeps for d unless ctx ends first; it reports whether ctx is
// still alive.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()

	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
