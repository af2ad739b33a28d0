package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/etcd"
	k8srender "github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// Errors apid maps onto gRPC codes.
var (
	// ErrNotControlPlane: the call needs etcd, which only control-plane
	// nodes run.
	ErrNotControlPlane = errors.New("etcd runs on control plane nodes only: this node is a worker")
	// ErrNotRunning: etcd is not serving on this node (waiting to join or
	// be bootstrapped, or stopped).
	ErrNotRunning = errors.New("etcd is not running on this node")
	// ErrAlreadyBootstrapped: bootstrap on a node whose etcd has data or
	// runs.
	ErrAlreadyBootstrapped = errors.New("etcd data directory is not empty: the cluster is already bootstrapped")
)

// splitBrainWarning is logged when machine.type init bootstraps by itself,
// as the seed explains.
const splitBrainWarning = `machine type "init" is deprecated: it bootstraps etcd on every first boot, and a second init node would form a separate cluster (split brain); use "controlplane" and 'talosctl bootstrap'`

// dataDir is where the member lives: /var/lib/etcd on EPHEMERAL (metal),
// under the state volume's ephemeral dir in container mode.
func dataDir(n *machine.Node) string {
	return filepath.Join(n.Platform().EphemeralDir, "lib", "etcd")
}

// pkiDir holds the member's certificates, next to its data.
func pkiDir(n *machine.Node) string {
	return filepath.Join(n.Platform().EphemeralDir, "lib", "etcd-pki")
}

// recoverPath is where an uploaded snapshot waits for bootstrap.
func recoverPath(n *machine.Node) string {
	return filepath.Join(n.Platform().EphemeralDir, "lib", "etcd-recover.snapshot")
}

// etcdOptions builds the member's options from the config.
func (p *Plane) etcdOptions(n *machine.Node, cfg *configs.Config, log io.Writer) (etcd.Options, error) {
	addrs, err := etcd.SelectAddresses(hostAddrs(cfg, nodeAddrs()), cfg.Cluster.Etcd.AdvertisedSubnets, cfg.Cluster.Etcd.ListenSubnets)
	if err != nil {
		return etcd.Options{}, fmt.Errorf("etcd addresses: %w", err)
	}

	if len(addrs.Advertised) == 0 {
		return etcd.Options{}, errors.New("etcd: the node has no address to advertise yet")
	}

	opts := etcd.Options{
		Name:                hostname(cfg),
		DataDir:             dataDir(n),
		PKIDir:              pkiDir(n),
		CA:                  &pki.CertAndKey{Crt: cfg.Cluster.Etcd.CA.Crt, Key: cfg.Cluster.Etcd.CA.Key},
		IPs:                 nodeAddrs(),
		AdvertisePeerURLs:   etcd.URLs(addrs.Advertised, p.opts.EtcdPeerPort),
		AdvertiseClientURLs: etcd.URLs(addrs.Advertised, p.opts.EtcdClientPort),
		ListenPeerURLs:      etcd.URLs(addrs.ListenPeer, p.opts.EtcdPeerPort),
		ListenClientURLs:    etcd.URLs(addrs.ListenClient, p.opts.EtcdClientPort),
		HeartbeatInterval:   p.opts.HeartbeatInterval,
		ElectionTimeout:     p.opts.ElectionTimeout,
		ExtraArgs:           cfg.Cluster.Etcd.ExtraArgs,
		Log:                 log, // etcd's own server log, for talosctl logs etcd
		RetryInterval:       p.opts.RetryInterval,
		WaitingInterval:     p.opts.WaitingInterval,
		JoinEndpoints:       func() []string { return p.joinEndpoints(cfg) },
		Waiting: func(endpoints []string) {
			fmt.Fprintf(log, "etcd is waiting to join the cluster, if this node is the first node in the cluster, please run \"talosctl bootstrap\" against one of the following IPs: %s\n", strings.Join(advertisedIPs(addrs), ", "))
		},
	}

	return opts, nil
}

// hostAddrs leaves out of addrs the config's shared IPs and those of the
// cluster's pod and service networks, as Talos's etcd does: a node whose CNI links outlived its pods
// (a reset Docker node boots again in the same network namespace, with
// flannel.1 and cni0 still up) must advertise its own address, not
// flannel's, which would come first by interface index.
func hostAddrs(cfg *configs.Config, addrs []netip.Addr) []netip.Addr {
	cl, err := k8srender.ClusterFrom(cfg)
	if err != nil {
		return addrs
	}

	var k8s []netip.Prefix

	for _, s := range slices.Concat(cl.PodSubnets, cl.ServiceSubnets) {
		if p, err := netip.ParsePrefix(s); err == nil {
			k8s = append(k8s, p.Masked())
		}
	}

	// A shared IP is the member's only while it holds it.
	shared := cfg.SharedIPs()

	out := slices.DeleteFunc(slices.Clone(addrs), func(a netip.Addr) bool {
		return slices.Contains(shared, a) || slices.ContainsFunc(k8s, func(p netip.Prefix) bool { return p.Contains(a) })
	})

	if len(out) == 0 {
		return addrs // better one in a pod subnet (a test's odd network) than none
	}

	return out
}

func advertisedIPs(a etcd.Addresses) []string {
	out := make([]string, len(a.Advertised))
	for i, ip := range a.Advertised {
		out[i] = ip.String()
	}

	return out
}

// joinEndpoints are the client URLs a joining member tries: the
// control-plane endpoint's host and every control-plane node discovery
// knows, on etcd's client port.
func (p *Plane) joinEndpoints(cfg *configs.Config) []string {
	hosts := p.controlPlaneHosts(cfg)
	out := make([]string, len(hosts))

	for i, h := range hostPorts(hosts, p.opts.EtcdClientPort) {
		out[i] = "https://" + h
	}

	return out
}

// etcdService runs the member: resume what the data dir holds, bootstrap
// on request (or by itself for machine.type init), else join.
func (p *Plane) etcdService(n *machine.Node, cfg *configs.Config) supervisor.Service {
	return supervisor.Service{
		ID: "etcd",
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, log io.Writer) (err error) {
			// Until the next run, a bootstrap request is answered with this.
			defer func() {
				if err != nil && ctx.Err() == nil {
					p.setEtcdBlocked("etcd failed to start (the service tries again): " + err.Error())
				}
			}()

			// On a boot from disk etcd starts before DHCP has an address:
			// wait for one rather than fail and restart.
			if err := p.waitForAddress(ctx, log); err != nil {
				return err
			}

			opts, err := p.etcdOptions(n, cfg, log)
			if err != nil {
				return err
			}

			if err := publishEtcdSpec(ctx, n, opts); err != nil {
				return err
			}

			srv, err := p.startMember(ctx, n, cfg, opts, log)
			if err != nil {
				return err
			}

			p.setServer(srv)
			defer p.setServer(nil)
			defer srv.Close()

			if err := publishMember(ctx, n, srv); err != nil {
				return err
			}

			defer publishMember(context.WithoutCancel(ctx), n, nil) //nolint:errcheck // best effort on the way out

			fmt.Fprintf(log, "etcd member %s (%x) serving on %s\n", opts.Name, srv.MemberID(), strings.Join(opts.AdvertiseClientURLs, ","))

			select {
			case <-ctx.Done():
				return nil
			case <-srv.Done():
				if p.hasLeft(srv) {
					fmt.Fprintln(log, "etcd member left the cluster; its data is wiped")
					return nil // Finished: not restarted into a rejoin
				}

				return fmt.Errorf("etcd stopped: %w", srv.Err())
			}
		}),
		Restart: supervisor.UntilSuccess,
		// Checked every 500 ms until first healthy: the member starts
		// only with the bootstrap (or its join), and the control plane's
		// static pods wait for the service to be healthy; at the 5 s
		// period that cost 3.6 s of cluster create (measured).
		Health: &supervisor.HealthCheck{
			Func:          p.healthy,
			InitialDelay:  100 * time.Millisecond,
			StartupPeriod: 500 * time.Millisecond,
			Period:        5 * time.Second,
			Timeout:       3 * time.Second,
		},
	}
}

// startMember picks the start mode and starts the member. While joining
// it also listens for a bootstrap request, which wins.
func (p *Plane) startMember(ctx context.Context, n *machine.Node, cfg *configs.Config, opts etcd.Options, log io.Writer) (*etcd.Server, error) {
	if etcd.IsInitialized(opts.DataDir) {
		return etcd.Start(ctx, opts, etcd.Resume)
	}

	if cfg.Machine.Type == "init" {
		fmt.Fprintln(log, splitBrainWarning)
		return etcd.Start(ctx, opts, etcd.Bootstrap)
	}

	joinCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	type started struct {
		srv *etcd.Server
		err error
	}

	joined := make(chan started, 1)

	go func() {
		srv, err := etcd.Start(joinCtx, opts, etcd.Join)
		joined <- started{srv, err}
	}()

	for {
		select {
		case r := <-joined:
			return r.srv, r.err
		case req := <-p.bootstrap:
			cancel()

			if r := <-joined; r.err == nil {
				// Joined just as the request came: keep the member.
				req.done <- fmt.Errorf("%w: this node has just joined a cluster", ErrAlreadyBootstrapped)
				return r.srv, nil
			}

			srv, err := p.bootstrapMember(ctx, opts, req, log)
			req.done <- err

			if err != nil {
				// Back to waiting: the operator may try again.
				return nil, fmt.Errorf("bootstrap: %w", err)
			}

			return srv, nil
		}
	}
}

// hasLeft reports whether srv stopped because it left the cluster.
func (p *Plane) hasLeft(srv *etcd.Server) bool {
	p.mu.Lock()
	defer p.mu.Unlock()

	return p.left == srv
}

func (p *Plane) setServer(srv *etcd.Server) {
	p.mu.Lock()
	defer p.mu.Unlock()

	p.srv = srv
	p.registryChangedLocked()
}

// registryChangedLocked wakes whoever waits on p.changed; p.mu is held.
func (p *Plane) registryChangedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// server is the running member, or why there is none.
func (p *Plane) server() (*etcd.Server, error) {
	p.mu.Lock()
	defer p.mu.Unlock()

	if !isControlPlane(p.cfg) {
		return nil, ErrNotControlPlane
	}

	if p.srv == nil {
		return nil, ErrNotRunning
	}

	return p.srv, nil
}

func (p *Plane) healthy(ctx context.Context) error {
	srv, err := p.server()
	if errors.Is(err, ErrNotRunning) {
		// The service runs but the member has not started: it waits for
		// talosctl bootstrap, or to join the cluster.
		return errors.New("waiting to bootstrap or to join the cluster")
	}

	if err != nil {
		return err
	}

	return srv.Healthy(ctx)
}

// Recover stores an uploaded snapshot for Bootstrap(recover=true).
func (p *Plane) Recover(r io.Reader) error {
	p.mu.Lock()
	cfg, n := p.cfg, p.node
	p.mu.Unlock()

	if !isControlPlane(cfg) {
		return ErrNotControlPlane
	}

	path := recoverPath(n)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), ".recover-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename

	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return fmt.Errorf("receive snapshot: %w", err)
	}

	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}

	if err := tmp.Close(); err != nil {
		return err
	}

	return os.Rename(tmp.Name(), path)
}

// Leave removes this member from the cluster and wipes its data (reset
// --graceful, etcd leave).
func (p *Plane) Leave(ctx context.Context, w io.Writer) error {
	srv, err := p.server()
	switch {
	case errors.Is(err, ErrNotControlPlane):
		fmt.Fprintln(w, "[talos] etcd does not run on this node: nothing to leave")
		return nil
	case errors.Is(err, ErrNotRunning):
		// Never joined (still waiting) or already stopped: not a member.
		fmt.Fprintln(w, "[talos] etcd is not running on this node: nothing to leave")
		return nil
	case err != nil:
		return err
	}

	p.mu.Lock()
	p.left = srv
	p.mu.Unlock()

	if err := srv.Leave(ctx); err != nil {
		p.mu.Lock()
		p.left = nil
		p.mu.Unlock()

		return err
	}

	fmt.Fprintln(w, "[talos] left the etcd cluster")

	return nil
}

// Server is the running member for apid's etcd calls.
func (p *Plane) Server() (*etcd.Server, error) { return p.server() }

// waitForAddress waits until the node has a global unicast address;
// meanwhile a bootstrap request is refused, saying so.
func (p *Plane) waitForAddress(ctx context.Context, log io.Writer) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()

	defer p.setEtcdBlocked("")

	for said := false; len(nodeAddrs()) == 0; {
		if !said {
			fmt.Fprintln(log, "etcd waits for the node to have an address")
			p.setEtcdBlocked(noAddress)

			said = true
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}

	return nil
}
