package controlplane

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/talosbox/talosbox/internal/network"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/vip"
)

// Operators is machine.Options.Operators: the shared IP's operator, which
// campaigns through this node's etcd member. networkd builds one per vip
// in the config, on control-plane nodes only.
func (p *Plane) Operators(spec networkres.OperatorSpecSpec, env network.OperatorEnv) (network.Operator, error) {
	if spec.Operator != networkres.OperatorVIP {
		return nil, nil
	}

	p.mu.Lock()
	cfg := p.cfg
	p.mu.Unlock()

	return vip.New(vip.Options{
		Spec:      spec,
		Client:    p.etcdClient,
		Candidate: hostname(cfg),
		TTL:       p.opts.VIPTTL,
		InNetNS:   env.InNetNS,
		Logger:    env.Logger,
	})
}

// etcdClient waits until this node's member serves, and returns its
// in-process client and a channel closed when the member stops.
func (p *Plane) etcdClient(ctx context.Context) (*clientv3.Client, <-chan struct{}, error) {
	for {
		p.mu.Lock()
		srv, changed := p.srv, p.changed
		p.mu.Unlock()

		if srv != nil {
			return srv.Client(), srv.Done(), nil
		}

		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-changed:
		}
	}
}
