// Package etcd is the etcd applet: one etcd member (internal/etcd,
// embedded) run alone, as a control-plane node runs it inside machined,
// until SIGTERM. Its flags are etcd's own where they mean the same.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/network"
)

// Applet is etcd's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "etcd",
	Summary: "embedded etcd member: bootstrap, join or resume a cluster",
	Main:    Main,
}

const usage = `Usage: etcd --data-dir DIR [--name NAME] [--join URL,...] [flags]

Run one embedded etcd member until SIGTERM or SIGINT, with mutual TLS on
its client and peer ports, as a control-plane node runs it. The data dir
decides how it starts:

  - it holds a member: resume it (a restart keeps the data);
  - it is empty and --join names running members: join their cluster as a
    learner, promoted to a voting member once it has caught up;
  - it is empty: bootstrap a new one-member cluster.

Its certificates are issued from the etcd CA into --pki-dir at every start:
ca.crt, a server and a peer pair, and an admin client pair for etcdctl:

  etcdctl --endpoints https://127.0.0.1:2379 --cacert PKI-DIR/ca.crt \
    --cert PKI-DIR/admin.crt --key PKI-DIR/admin.key member list

The CA comes from --ca-cert and --ca-key, else from an earlier start's
PKI-DIR/ca.key; a new cluster without either gets a new CA there. Members
of one cluster share the CA: start a joining member with the first one's
PKI-DIR/ca.crt and PKI-DIR/ca.key.

Flags:
`

// options is the parsed command line.
type options struct {
	name, dataDir, pkiDir, caCert, caKey string

	join, addresses                                          applet.List
	listenClient, advertiseClient, listenPeer, advertisePeer applet.List

	extraArgs keyValues
}

// Main runs etcd with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	fs := applet.NewFlags("etcd", usage, env)

	var o options

	fs.StringVar(&o.dataDir, "data-dir", "", "`DIR` where the member keeps its WAL and database (required)")
	fs.StringVar(&o.name, "name", "", "member `NAME`, unique in the cluster (default: the hostname)")
	fs.StringVar(&o.pkiDir, "pki-dir", "", "`DIR` the member's certificates are issued to (default: DATA-DIR-pki)")
	fs.StringVar(&o.caCert, "ca-cert", "", "the cluster's etcd CA certificate, a PEM `FILE` (with --ca-key)")
	fs.StringVar(&o.caKey, "ca-key", "", "the etcd CA's private key, a PEM `FILE` (with --ca-cert)")
	fs.Var(&o.join, "join", "client `URLs` of running members to join through (https://IP:2379,...)")
	fs.Var(&o.addresses, "addresses", "this member's `IPs`: certificate SANs, and the advertised address when no URL names one (default: this host's global unicast addresses, else 127.0.0.1)")
	fs.Var(&o.listenClient, "listen-client-urls", "`URLs` to serve clients on (default https://0.0.0.0:2379)")
	fs.Var(&o.advertiseClient, "advertise-client-urls", "client `URLs` told to the cluster (default: the listen URLs when they name an address, else the first of --addresses)")
	fs.Var(&o.listenPeer, "listen-peer-urls", "`URLs` to serve peers on (default https://0.0.0.0:2380)")
	fs.Var(&o.advertisePeer, "initial-advertise-peer-urls", "peer `URLs` told to the cluster (defaults as for the client URLs)")
	fs.Var(&o.extraArgs, "arg", "an etcd flag applied in-process, as in cluster.etcd.extraArgs: `KEY=VALUE`, repeatable (log-level=warn, heartbeat-interval=100, ...)")
	if code, done := fs.Parse(args); done {
		return code
	}

	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "etcd: unexpected argument %q (flags only; see etcd --help)\n", fs.Arg(0))
		return 2
	}

	opts, mode, err := o.resolve()
	if err != nil {
		fmt.Fprintf(env.Stderr, "etcd: %v\n", err)
		return 2
	}

	return run(ctx, o, opts, mode, env)
}

// resolve checks the flags and turns them into the member's options and
// how it starts. The CA is loaded later, by run, since a new cluster may
// get a new one.
func (o *options) resolve() (etcd.Options, etcd.Mode, error) {
	if o.dataDir == "" {
		return etcd.Options{}, 0, errors.New("--data-dir DIR is required")
	}

	o.dataDir = filepath.Clean(o.dataDir)
	if o.pkiDir == "" {
		// Beside the data dir, as machined keeps /var/lib/etcd and
		// /var/lib/etcd-pki: Bootstrap wants the data dir empty.
		o.pkiDir = o.dataDir + "-pki"
	}

	if (o.caCert == "") != (o.caKey == "") {
		return etcd.Options{}, 0, errors.New("--ca-cert and --ca-key go together")
	}

	if o.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return etcd.Options{}, 0, fmt.Errorf("no --name, and no hostname to default to: %w", err)
		}

		o.name = h
	}

	extraArgs := configs.ArgsOf(o.extraArgs)

	if err := etcd.ValidateExtraArgs(extraArgs); errors.Is(err, etcd.ErrArgOwned) {
		return etcd.Options{}, 0, fmt.Errorf("--arg: %w: this applet's own flags set it (see etcd --help)", err)
	} else if err != nil {
		return etcd.Options{}, 0, fmt.Errorf("--arg: %w", err)
	}

	ips, err := o.ips()
	if err != nil {
		return etcd.Options{}, 0, err
	}

	opts := etcd.Options{
		Name:      o.name,
		DataDir:   o.dataDir,
		PKIDir:    o.pkiDir,
		IPs:       ips,
		ExtraArgs: extraArgs,
	}

	opts.ListenClientURLs, opts.AdvertiseClientURLs = urls(o.listenClient, o.advertiseClient, ips, etcd.ClientPort)
	opts.ListenPeerURLs, opts.AdvertisePeerURLs = urls(o.listenPeer, o.advertisePeer, ips, etcd.PeerPort)

	mode := etcd.Bootstrap

	switch {
	case etcd.IsInitialized(o.dataDir):
		mode = etcd.Resume
	case len(o.join) > 0:
		mode = etcd.Join
		endpoints := []string(o.join)
		opts.JoinEndpoints = func() []string { return endpoints }
	}

	return opts, mode, nil
}

// ips are --addresses, or this host's.
func (o *options) ips() ([]netip.Addr, error) {
	if len(o.addresses) == 0 {
		if host := network.HostAddrs(); len(host) > 0 {
			return host, nil
		}

		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}

	ips := make([]netip.Addr, 0, len(o.addresses))

	for _, s := range o.addresses {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("--addresses: %q is not an IP address", s)
		}

		ips = append(ips, ip)
	}

	return ips, nil
}

// urls fills in the listen and advertised URLs of one port. Listening
// defaults to every address; the advertised URLs to the listen URLs when
// each names an address (a member listening on 127.0.0.1:12379 is reached
// there), else to the first IP, as on a node.
func urls(listen, advertise applet.List, ips []netip.Addr, port int) ([]string, []string) {
	if len(listen) == 0 {
		unspecified := netip.IPv4Unspecified()
		if ips[0].Is6() && !ips[0].Is4In6() {
			unspecified = netip.IPv6Unspecified()
		}

		listen = etcd.URLs([]netip.Addr{unspecified}, port)
	}

	if len(advertise) == 0 {
		advertise = listen
		if !specific(listen) {
			advertise = etcd.URLs(ips[:1], port)
		}
	}

	return listen, advertise
}

// specific reports whether every URL names a host that is not the
// unspecified address, so that peers and clients can dial it.
func specific(urls []string) bool {
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			return false // etcd.Start reports a bad URL
		}

		if ip, err := netip.ParseAddr(u.Hostname()); err == nil && ip.IsUnspecified() {
			return false
		}
	}

	return true
}

func run(ctx context.Context, o options, opts etcd.Options, mode etcd.Mode, env applet.Env) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	ca, err := loadCA(o, mode, env.Stdout)
	if err != nil {
		fmt.Fprintf(env.Stderr, "etcd: %v\n", err)
		return 1
	}

	opts.CA = ca
	opts.Log = env.Stderr // etcd's own JSON log, as upstream etcd writes it
	opts.Waiting = func(endpoints []string) {
		fmt.Fprintf(env.Stdout, "etcd: waiting to join the cluster through %s\n", strings.Join(endpoints, ", "))
	}

	if mode == etcd.Resume && len(o.join) > 0 {
		fmt.Fprintf(env.Stdout, "etcd: %s holds a member: resuming it (--join is only for a new member)\n", o.dataDir)
	}

	srv, err := etcd.Start(ctx, opts, mode)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(env.Stdout, "etcd: stopped before the member served (%v)\n", err)
			return 0
		}

		fmt.Fprintf(env.Stderr, "etcd: %v\n", err)

		return 1
	}

	fmt.Fprintf(env.Stdout, "etcd: member %s (%x) %s: serving clients on %s (advertised %s), peers on %s (advertised %s)\n",
		opts.Name, srv.MemberID(), started[mode], strings.Join(opts.ListenClientURLs, ","), strings.Join(opts.AdvertiseClientURLs, ","),
		strings.Join(opts.ListenPeerURLs, ","), strings.Join(opts.AdvertisePeerURLs, ","))
	fmt.Fprintf(env.Stdout, "etcd: client certificates in %s (%s, %s, %s)\n", opts.PKIDir, etcd.CACertFile, etcd.AdminCertFile, etcd.AdminKeyFile)

	if mode == etcd.Join {
		go func() {
			// The joining line above says "learner"; this one says when it
			// counts towards quorum.
			if srv.WaitVoter(ctx) == nil {
				fmt.Fprintf(env.Stdout, "etcd: member %s is a voting member\n", opts.Name)
			}
		}()
	}

	select {
	case <-ctx.Done():
		fmt.Fprintln(env.Stdout, "etcd: stopping")
		srv.Close()
		fmt.Fprintln(env.Stdout, "etcd: stopped")

		return 0
	case <-srv.Done():
		fmt.Fprintf(env.Stderr, "etcd: %v\n", srv.Err())
		return 1
	}
}

var started = map[etcd.Mode]string{
	etcd.Bootstrap: "bootstrapped a new cluster",
	etcd.Join:      "joined the cluster as a learner",
	etcd.Resume:    "resumed",
}
