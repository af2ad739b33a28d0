package controlplane

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/trustd"
)

// Controllers is machine.Options.Controllers: discovery, on every node.
func (p *Plane) Controllers(n *machine.Node) []bus.Controller {
	return []bus.Controller{&discovery.Controller{Registry: p.discoveryRegistry, NodeID: n.Identity, Interval: p.opts.DiscoveryInterval, OnList: p.setKnown}}
}

// setKnown keeps the control-plane nodes discovery found.
func (p *Plane) setKnown(all []discovery.AffiliateSpec) {
	var cps []netip.Addr

	for _, a := range all {
		if (a.MachineType == "controlplane" || a.MachineType == "init") && len(a.Addresses) > 0 {
			cps = append(cps, a.Addresses[0])
		}
	}

	p.mu.Lock()
	p.knownCPs = cps
	p.mu.Unlock()
}

// controlPlaneHosts are the hosts to reach the control plane through: the
// control-plane endpoint's host first, then every control-plane node
// discovery knows, so losing the endpoint's node does not cut workers and
// joiners off.
func (p *Plane) controlPlaneHosts(cfg *configs.Config) []string {
	var hosts []string

	if cfg.Cluster != nil && cfg.Cluster.ControlPlane != nil {
		if u, err := url.Parse(cfg.Cluster.ControlPlane.Endpoint); err == nil && u.Hostname() != "" {
			hosts = append(hosts, u.Hostname())
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()

	for _, ip := range p.knownCPs {
		if h := ip.String(); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}

	return hosts
}

// TrustdEndpoints are where a worker asks trustd for certificates and
// discovery.
func (p *Plane) TrustdEndpoints(cfg *configs.Config) []string {
	return hostPorts(p.controlPlaneHosts(cfg), p.opts.TrustdPort)
}

func hostPorts(hosts []string, port int) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = net.JoinHostPort(h, strconv.Itoa(port))
	}

	return out
}

// discoveryRegistry is where this node publishes: its own etcd member when
// it runs one, else trustd on the control plane.
func (p *Plane) discoveryRegistry(cfg *configs.Config) discovery.Registry {
	if srv, err := p.server(); err == nil && isControlPlane(cfg) {
		return discovery.EtcdRegistry{Client: srv.Client(), TTL: p.opts.DiscoveryTTL}
	}

	if cfg.Machine == nil || cfg.Machine.CA == nil || cfg.Machine.Token == "" {
		return nil
	}

	pems := [][]byte{cfg.Machine.CA.Crt}
	for _, a := range cfg.Machine.AcceptedCAs {
		pems = append(pems, a.Crt)
	}

	trust, err := pki.CertPool(pems...)
	if err != nil {
		return nil
	}

	return &trustd.Registry{Endpoints: p.TrustdEndpoints(cfg), Token: cfg.Machine.Token, Trust: trust}
}

// servedRegistry is the registry trustd serves to workers: this node's
// etcd member, whenever it runs.
type servedRegistry struct{ p *Plane }

func (r servedRegistry) registry() (discovery.Registry, error) {
	srv, err := r.p.server()
	if err != nil {
		return nil, err
	}

	return discovery.EtcdRegistry{Client: srv.Client(), TTL: r.p.opts.DiscoveryTTL}, nil
}

func (r servedRegistry) Publish(ctx context.Context, a discovery.AffiliateSpec) error {
	reg, err := r.registry()
	if err != nil {
		return err
	}

	return reg.Publish(ctx, a)
}

func (r servedRegistry) List(ctx context.Context) ([]discovery.AffiliateSpec, error) {
	reg, err := r.registry()
	if err != nil {
		return nil, err
	}

	return reg.List(ctx)
}
