package etcd

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/pki"
)

// Default ports, as in Talos and upstream etcd.
const (
	ClientPort = 2379
	PeerPort   = 2380
)

// Production defaults for the join and retry loops (Talos uses the same).
const (
	DefaultRetryInterval   = 3 * time.Second
	DefaultWaitingInterval = 30 * time.Second
)

// Mode says how Start brings the member up.
type Mode int

// Start modes.
const (
	// Bootstrap creates a new one-member cluster. The data dir must be empty.
	Bootstrap Mode = iota
	// Join adds this node to a running cluster as a learner, then promotes
	// it. The data dir must be empty.
	Join
	// Resume starts the member already in the data dir.
	Resume
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Bootstrap:
		return "bootstrap"
	case Join:
		return "join"
	case Resume:
		return "resume"
	default:
		return fmt.Sprintf("Mode(%d)", int(m))
	}
}

// Options describe this node's member. Zero values take the defaults noted
// on each field.
type Options struct {
	// Name is the member name: the node's hostname. Join replaces a stale
	// member of the same name, so it must be unique in the cluster.
	Name string
	// DataDir holds the member's WAL and database (Talos: /var/lib/etcd).
	DataDir string
	// PKIDir receives this member's certificates (see WriteCerts).
	PKIDir string
	// CA is the cluster's etcd CA, with its key: every member issues its
	// own certificates at start, so they always carry the current addresses.
	CA *pki.CertAndKey

	// IPs and DNSNames are this node's addresses, put in the certificates'
	// SANs (with Name, localhost, 127.0.0.1 and ::1). Peers check the
	// source address of a peer connection against these, so list every
	// address the node may connect from.
	IPs      []netip.Addr
	DNSNames []string

	// Listen URLs default to https://0.0.0.0 (or [::] when IPs has an IPv6
	// address) on ClientPort and PeerPort; advertised URLs default to the
	// first of IPs. SelectAddresses and URLs build them from the node's
	// addresses and cluster.etcd.{advertised,listen}Subnets. All must be
	// https: both ports require client certificates from the etcd CA.
	ListenPeerURLs      []string
	ListenClientURLs    []string
	AdvertisePeerURLs   []string
	AdvertiseClientURLs []string

	// HeartbeatInterval and ElectionTimeout default to etcd's 100 ms and
	// 1 s; the extraArgs heartbeat-interval and election-timeout win.
	HeartbeatInterval time.Duration
	ElectionTimeout   time.Duration

	// ExtraArgs are cluster.etcd.extraArgs: etcd flag names and values,
	// see ValidateExtraArgs.
	ExtraArgs configs.Args

	// Log receives etcd's JSON log lines; nil discards them.
	Log io.Writer

	// JoinEndpoints returns the client URLs (https://IP:2379) of members
	// to join through. It is called before every attempt, so it can follow
	// discovery while the node waits. Required for Join.
	JoinEndpoints func() []string
	// Waiting is called while Join finds nobody to join, at most once per
	// WaitingInterval, with the endpoints it tried, so the caller can tell
	// the operator to run `talosctl bootstrap`. It runs on the join loop:
	// it must not block.
	Waiting func(endpoints []string)
	// RetryInterval paces the join, promotion and leave retries
	// (DefaultRetryInterval).
	RetryInterval time.Duration
	// WaitingInterval is the least time between two Waiting calls
	// (DefaultWaitingInterval).
	WaitingInterval time.Duration
}

// resolved is Options after defaults and validation, with URLs parsed.
type resolved struct {
	Options

	listenPeer, listenClient, advertisePeer, advertiseClient []url.URL
}

// resolve fills in defaults and checks what every mode needs.
func (o Options) resolve() (*resolved, error) {
	if o.Name == "" {
		return nil, errors.New("etcd: member name is required")
	}

	if o.DataDir == "" {
		return nil, errors.New("etcd: data dir is required")
	}

	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}

	if o.WaitingInterval <= 0 {
		o.WaitingInterval = DefaultWaitingInterval
	}

	any6 := false

	for _, ip := range o.IPs {
		if ip.Is6() && !ip.Is4In6() {
			any6 = true
		}
	}

	unspecified := netip.IPv4Unspecified()
	if any6 {
		unspecified = netip.IPv6Unspecified()
	}

	if len(o.ListenPeerURLs) == 0 {
		o.ListenPeerURLs = URLs([]netip.Addr{unspecified}, PeerPort)
	}

	if len(o.ListenClientURLs) == 0 {
		o.ListenClientURLs = URLs([]netip.Addr{unspecified}, ClientPort)
	}

	if len(o.IPs) > 0 {
		if len(o.AdvertisePeerURLs) == 0 {
			o.AdvertisePeerURLs = URLs(o.IPs[:1], PeerPort)
		}

		if len(o.AdvertiseClientURLs) == 0 {
			o.AdvertiseClientURLs = URLs(o.IPs[:1], ClientPort)
		}
	}

	r := &resolved{Options: o}

	for _, u := range []struct {
		name string
		in   []string
		out  *[]url.URL
	}{
		{"listen peer", o.ListenPeerURLs, &r.listenPeer},
		{"listen client", o.ListenClientURLs, &r.listenClient},
		{"advertised peer", o.AdvertisePeerURLs, &r.advertisePeer},
		{"advertised client", o.AdvertiseClientURLs, &r.advertiseClient},
	} {
		parsed, err := parseHTTPSURLs(u.in)
		if err != nil {
			return nil, fmt.Errorf("etcd: %s URLs: %w", u.name, err)
		}

		if len(parsed) == 0 {
			return nil, fmt.Errorf("etcd: no %s URLs: set them or give the node's IPs", u.name)
		}

		*u.out = parsed
	}

	return r, nil
}

// parseHTTPSURLs parses URLs and refuses anything but https: a plain http
// port would let anyone on the network read and write the cluster state.
func parseHTTPSURLs(in []string) ([]url.URL, error) {
	out := make([]url.URL, 0, len(in))

	for _, s := range in {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}

		if u.Scheme != "https" {
			return nil, fmt.Errorf("%q: scheme must be https", s)
		}

		if u.Port() == "" {
			return nil, fmt.Errorf("%q: port is required", s)
		}

		out = append(out, *u)
	}

	return out, nil
}

// initialCluster is the --initial-cluster value naming only this member.
func (r *resolved) initialCluster() string {
	s := ""

	for _, u := range r.AdvertisePeerURLs {
		if s != "" {
			s += ","
		}

		s += r.Name + "=" + u
	}

	return s
}
