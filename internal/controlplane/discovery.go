package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/trustd"
)

// Controllers is machine.Options.Controllers: discovery, on every node.
func (p *Plane) Controllers(n *machine.Node) []bus.Controller {
	return []bus.Controller{&discovery.Controller{
		Registry: p.discoveryRegistry, RegistryChanged: p.registryChanged,
		NodeID: n.Identity, Interval: p.opts.DiscoveryInterval, OnList: p.setKnown,
	}}
}

// registryChanged is closed when discoveryRegistry may answer differently:
// the etcd member started or stopped (a control plane switches registries
// and should not wait a tick to publish to its own etcd), or the node
// withdrew from discovery or came back.
func (p *Plane) registryChanged() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()

	return p.changed
}

// setKnown keeps the control-plane nodes discovery found.
func (p *Plane) setKnown(all []cluster.AffiliateSpec) {
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
// it runs one, else trustd on the control plane; none once it has left.
func (p *Plane) discoveryRegistry(cfg *configs.Config) discovery.Registry {
	p.mu.Lock()
	withdrawn := p.withdrawn
	p.mu.Unlock()

	if withdrawn {
		return nil
	}

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

	return p.trustdRegistry(p.TrustdEndpoints(cfg), cfg.Machine.Token, pems)
}

// trustdRegistry is the registry through trustd for these endpoints and
// credentials: the same one for as long as they stay, since the discovery
// controller keeps one watch per registry, and a new registry each refresh
// would re-dial the watch every time.
func (p *Plane) trustdRegistry(endpoints []string, token string, pems [][]byte) discovery.Registry {
	key := strings.Join(endpoints, ",") + "\x00" + token + "\x00" + string(bytes.Join(pems, nil))

	p.mu.Lock()
	defer p.mu.Unlock()

	if p.trustdReg != nil && p.trustdRegKey == key {
		return p.trustdReg
	}

	trust, err := pki.CertPool(pems...)
	if err != nil {
		return nil
	}

	p.trustdReg, p.trustdRegKey = &trustd.Registry{Endpoints: endpoints, Token: token, Trust: trust}, key

	return p.trustdReg
}

// LeaveCluster is a graceful reset's leave: this node stops publishing and
// deletes its discovery record, so every node drops it from Members now
// rather than when its lease runs out, then leaves etcd (Leave).
func (p *Plane) LeaveCluster(ctx context.Context, w io.Writer) error {
	p.withdraw(ctx, w)

	if err := p.Leave(ctx, w); err != nil {
		// The reset stops here and the node stays: it publishes again.
		p.setWithdrawn(false)
		return err
	}

	return nil
}

func (p *Plane) setWithdrawn(v bool) {
	p.mu.Lock()
	defer p.mu.Unlock()

	p.withdrawn = v
	p.registryChangedLocked()
}

// withdraw takes the node out of discovery for good. A publish already in
// flight may put the record back; it then expires with its lease, as it
// did before there was a withdrawal. Failing here does not stop the
// reset, for the same reason.
func (p *Plane) withdraw(ctx context.Context, w io.Writer) {
	p.mu.Lock()
	cfg, n := p.cfg, p.node
	p.mu.Unlock()

	if cfg == nil || n == nil {
		return
	}

	reg := p.discoveryRegistry(cfg)
	p.setWithdrawn(true)

	rm, ok := reg.(discovery.Remover)
	if !ok {
		return
	}

	id, err := n.Identity()
	if err == nil {
		err = rm.Remove(ctx, id)
	}

	if err != nil {
		fmt.Fprintf(w, "[talos] discovery: this node's record stays until it expires: %v\n", err)
		return
	}

	fmt.Fprintln(w, "[talos] removed this node from discovery")
}

// servedRegistry is the registry trustd serves to workers: this node's
// etcd member, whenever it runs.
type servedRegistry struct{ p *Plane }

var (
	_ discovery.Watcher = servedRegistry{}
	_ discovery.Remover = servedRegistry{}
)

func (r servedRegistry) registry() (discovery.EtcdRegistry, error) {
	srv, err := r.p.server()
	if err != nil {
		return discovery.EtcdRegistry{}, fmt.Errorf("discovery registry: %w", err)
	}

	return discovery.EtcdRegistry{Client: srv.Client(), TTL: r.p.opts.DiscoveryTTL}, nil
}

func (r servedRegistry) Publish(ctx context.Context, a cluster.AffiliateSpec) error {
	reg, err := r.registry()
	if err != nil {
		return err
	}

	return reg.Publish(ctx, a)
}

func (r servedRegistry) List(ctx context.Context) ([]cluster.AffiliateSpec, error) {
	reg, err := r.registry()
	if err != nil {
		return nil, err
	}

	return reg.List(ctx)
}

func (r servedRegistry) Remove(ctx context.Context, nodeID string) error {
	reg, err := r.registry()
	if err != nil {
		return err
	}

	return reg.Remove(ctx, nodeID)
}

// Watch watches the member running now; when it stops the watch breaks,
// and the next one watches its successor.
func (r servedRegistry) Watch(ctx context.Context, changed func([]cluster.AffiliateSpec)) error {
	reg, err := r.registry()
	if err != nil {
		return err
	}

	return reg.Watch(ctx, changed)
}
