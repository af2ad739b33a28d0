package k8s

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// Prism is KubePrism's load balancer: a TCP proxy on loopback in front
// of the API servers. The kubelet reaches the cluster through it, so a
// control plane whose own API server is down (a bad image, an upgrade)
// still has one: the kubelet keeps authorizing requests (its webhook
// authorizer asks the API server), reporting its pods and renewing its
// lease. TLS stays end to end; Prism only moves bytes.
type Prism struct {
	// DialTimeout bounds one attempt to reach an upstream (3 s).
	DialTimeout time.Duration
	// Probe says whether an upstream serves; nil takes one that accepts a
	// TCP connection as serving. An API server that accepts connections
	// with no etcd behind it (an orphan of a reset node) serves nothing:
	// APIServerProbe asks its /readyz.
	Probe func(ctx context.Context, upstream string) error

	mu        sync.Mutex
	upstreams []string
	healthy   map[string]bool
	// conns are the connections Prism made or accepted, by the upstream
	// they are joined to ("" while it is being chosen).
	conns  map[net.Conn]string
	closed bool
}

// SetUpstreams replaces the API servers, in order of preference (the
// node's own first). Connections already made stay where they are.
func (p *Prism) SetUpstreams(upstreams []string) {
	p.mu.Lock()
	defer p.mu.Unlock()

	p.upstreams = slices.Clone(upstreams)
}

// Upstreams returns the API servers in order of preference.
func (p *Prism) Upstreams() []string {
	p.mu.Lock()
	defer p.mu.Unlock()

	return slices.Clone(p.upstreams)
}

// Check probes every upstream at once and remembers which serve; new
// connections try those first. While one serves, the connections joined
// to an upstream that does not are closed, so that their clients (the
// kubelet keeps one HTTP/2 connection for minutes) reconnect to one that
// does. It reports whether any upstream serves.
func (p *Prism) Check(ctx context.Context) bool {
	ups := p.Upstreams()
	ok := make([]bool, len(ups))

	var wg sync.WaitGroup

	for i, up := range ups {
		wg.Go(func() { ok[i] = p.probe(ctx, up) == nil })
	}

	wg.Wait()

	p.mu.Lock()
	defer p.mu.Unlock()

	p.healthy = map[string]bool{}
	for i, up := range ups {
		p.healthy[up] = ok[i]
	}

	serving := slices.Contains(ok, true)

	if serving {
		for c, up := range p.conns {
			if up != "" && !p.healthy[up] {
				c.Close()
			}
		}
	}

	return serving
}

// Healthy returns the upstreams the last Check found serving.
func (p *Prism) Healthy() []string {
	p.mu.Lock()
	defer p.mu.Unlock()

	var out []string

	for _, up := range p.upstreams {
		if p.healthy[up] {
			out = append(out, up)
		}
	}

	return out
}

func (p *Prism) probe(ctx context.Context, up string) error {
	if p.Probe != nil {
		ctx, cancel := context.WithTimeout(ctx, cmp.Or(p.DialTimeout, 3*time.Second))
		defer cancel()

		return p.Probe(ctx, up)
	}

	c, err := p.dialOne(ctx, up)
	if err == nil {
		c.Close()
	}

	return err
}

// Serve accepts connections on ln until ctx ends, then closes ln and
// every connection it made.
func (p *Prism) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() {
		ln.Close()

		p.mu.Lock()
		defer p.mu.Unlock()

		p.closed = true

		for c := range p.conns {
			c.Close()
		}
	})
	defer stop()

	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}

			return err
		}

		go p.proxy(ctx, c)
	}
}

// proxy joins a client to the first upstream that answers and closes
// both sides when either does, so that a client whose API server went
// away sees it at once and reconnects (to another).
func (p *Prism) proxy(ctx context.Context, client net.Conn) {
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)

	up, addr, err := p.dial(ctx)
	if err != nil {
		return
	}

	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)

	p.join(addr, client, up)

	done := make(chan struct{}, 2)

	go func() { io.Copy(up, client); done <- struct{}{} }() //nolint:errcheck // either side's end ends both
	go func() { io.Copy(client, up); done <- struct{}{} }() //nolint:errcheck // either side's end ends both

	<-done
}

// dial tries the upstreams last seen healthy first, then the others: a
// check may be up to one interval old.
func (p *Prism) dial(ctx context.Context) (net.Conn, string, error) {
	p.mu.Lock()
	ups := slices.Clone(p.upstreams)
	healthy := p.healthy
	p.mu.Unlock()

	slices.SortStableFunc(ups, func(a, b string) int {
		switch {
		case healthy[a] == healthy[b]:
			return 0
		case healthy[a]:
			return -1
		default:
			return 1
		}
	})

	errs := []error{}

	for _, up := range ups {
		c, err := p.dialOne(ctx, up)
		if err == nil {
			return c, up, nil
		}

		errs = append(errs, err)
	}

	if len(errs) == 0 {
		return nil, "", errors.New("kubeprism: no upstreams")
	}

	return nil, "", errors.Join(errs...)
}

func (p *Prism) dialOne(ctx context.Context, up string) (net.Conn, error) {
	d := net.Dialer{Timeout: p.DialTimeout}
	if d.Timeout == 0 {
		d.Timeout = 3 * time.Second
	}

	return d.DialContext(ctx, "tcp", up)
}

// track records c so that Serve's end closes it; false once it has.
func (p *Prism) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()

	if p.closed {
		return false
	}

	if p.conns == nil {
		p.conns = map[net.Conn]string{}
	}

	p.conns[c] = ""

	return true
}

// join records that conns are joined to the upstream up.
func (p *Prism) join(up string, conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()

	for _, c := range conns {
		if _, ok := p.conns[c]; ok {
			p.conns[c] = up
		}
	}
}

func (p *Prism) untrack(c net.Conn) {
	c.Close()

	p.mu.Lock()
	defer p.mu.Unlock()

	delete(p.conns, c)
}
