// Package controlplane holds what a control-plane node runs beyond the
// node itself: the embedded etcd member (bootstrap, join, leave and the
// etcd API apid serves) and trustd, which signs workers' apid
// certificates. machined wires a Plane into the node through
// machine.Options.Services and into apid as its Etcd.
package controlplane

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/supervisor"
	"github.com/talosbox/talosbox/internal/trustd"
)

// Options configure a Plane; the zero value is production's.
type Options struct {
	// TrustdPort is trustd's port (50001).
	TrustdPort int
	// EtcdClientPort and EtcdPeerPort are etcd's (2379, 2380).
	EtcdClientPort, EtcdPeerPort int
	// HeartbeatInterval and ElectionTimeout override etcd's raft timers
	// (tests; cluster.etcd.extraArgs win).
	HeartbeatInterval, ElectionTimeout time.Duration
	// NoEtcd leaves etcd out (machined --etcd=false); trustd still runs.
	NoEtcd bool
	// RetryInterval and WaitingInterval pace the join (3 s, 30 s).
	RetryInterval, WaitingInterval time.Duration
	// VIPTTL is the shared IP's election lease (vip.DefaultTTL): how long
	// a dead owner keeps it.
	VIPTTL time.Duration
	// DiscoveryInterval and DiscoveryTTL pace discovery (10 s, 30 s).
	DiscoveryInterval, DiscoveryTTL time.Duration
}

// Plane is one node's control-plane services. Its methods serve apid's
// etcd calls; on a worker they fail with ErrNotControlPlane.
type Plane struct {
	opts Options
	node *machine.Node

	mu sync.Mutex
	// srv is the running member (nil while etcd waits or is stopped).
	srv *etcd.Server
	// cfg is the config the services were last started with.
	cfg *configs.Config
	// bootstrap asks a waiting etcd service to bootstrap instead of join.
	bootstrap chan bootstrapRequest
	// left is the member that is leaving or has left the cluster.
	left *etcd.Server
	// changed is closed and replaced whenever srv or withdrawn changes.
	changed chan struct{}
	// knownCPs are the control-plane nodes discovery last listed.
	knownCPs []netip.Addr
	// trustdReg is the discovery registry through trustd, kept while
	// trustdRegKey (its endpoints and credentials) stays the same.
	trustdReg    *trustd.Registry
	trustdRegKey string
	// withdrawn is set once the node left discovery (graceful reset).
	withdrawn bool
	// etcdBlocked says why the etcd service cannot take a bootstrap
	// request now ("" when it may); etcdChanged is closed and replaced
	// when it changes.
	etcdBlocked string
	etcdChanged chan struct{}
}

// New makes a Plane for node.
func New(opts Options) *Plane {
	if opts.TrustdPort == 0 {
		opts.TrustdPort = constants.TrustdPort
	}

	if opts.EtcdClientPort == 0 {
		opts.EtcdClientPort = 2379
	}

	if opts.EtcdPeerPort == 0 {
		opts.EtcdPeerPort = 2380
	}

	return &Plane{opts: opts, bootstrap: make(chan bootstrapRequest), changed: make(chan struct{}), etcdChanged: make(chan struct{})}
}

// Services is machine.Options.Services: etcd and trustd on control-plane
// nodes, nothing on workers.
func (p *Plane) Services(n *machine.Node, cfg *configs.Config) []supervisor.Service {
	p.mu.Lock()
	p.node, p.cfg = n, cfg
	// A config loaded after a reset (in-process in container mode) is a
	// node joining again: it publishes.
	if p.withdrawn {
		p.withdrawn = false
		p.registryChangedLocked()
	}
	p.mu.Unlock()

	if !isControlPlane(cfg) {
		return nil
	}

	svcs := []supervisor.Service{p.trustdService(n, cfg)}

	if !p.opts.NoEtcd && cfg.Cluster != nil && cfg.Cluster.Etcd != nil && cfg.Cluster.Etcd.CA != nil && len(cfg.Cluster.Etcd.CA.Key) > 0 {
		svcs = append(svcs, p.etcdService(n, cfg))
	}

	return svcs
}

func isControlPlane(cfg *configs.Config) bool {
	if cfg == nil || cfg.Machine == nil {
		return false
	}

	return cfg.Machine.Type == "controlplane" || cfg.Machine.Type == "init"
}

// hostname is the node's name: machine.network.hostname, else the
// kernel's.
func hostname(cfg *configs.Config) string { return machine.Hostname(cfg) }

// nodeAddrs are the node's global unicast addresses, as the kernel has
// them now.
func nodeAddrs() []netip.Addr { return network.HostAddrs() }

// nodeNames are the SANs of this node's server certificates: its
// addresses, loopback, its hostname and machine.certSANs.
func nodeNames(cfg *configs.Config) ([]net.IP, []string) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	dns := []string{"localhost", hostname(cfg)}

	for _, a := range nodeAddrs() {
		ips = append(ips, a.AsSlice())
	}

	if cfg.Machine != nil {
		for _, san := range cfg.Machine.CertSANs {
			if ip := net.ParseIP(san); ip != nil {
				ips = append(ips, ip)
			} else if !slices.Contains(dns, san) {
				dns = append(dns, san)
			}
		}
	}

	return ips, dns
}
