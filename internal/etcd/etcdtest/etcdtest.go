// Package etcdtest starts a real one-member etcd (internal/etcd, embedded)
// on loopback for other packages' tests, with fast raft timers.
package etcdtest

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/pki"
)

// Member is a running member and how to reach it.
type Member struct {
	Server   *etcd.Server
	Endpoint string
	TLS      *tls.Config
}

// Start bootstraps a member for the test and closes it at cleanup.
func Start(t testing.TB) *Member {
	t.Helper()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "etcd", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	lo := netip.MustParseAddr("127.0.0.1")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for attempt := 0; ; attempt++ {
		ports := freePorts(t, 2)
		opts := etcd.Options{
			Name: "test", DataDir: filepath.Join(dir, "data"), PKIDir: filepath.Join(dir, "pki"), CA: ca,
			IPs:               []netip.Addr{lo},
			ListenClientURLs:  etcd.URLs([]netip.Addr{lo}, ports[0]),
			ListenPeerURLs:    etcd.URLs([]netip.Addr{lo}, ports[1]),
			HeartbeatInterval: 10 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond,
		}
		opts.AdvertiseClientURLs, opts.AdvertisePeerURLs = opts.ListenClientURLs, opts.ListenPeerURLs

		srv, err := etcd.Start(ctx, opts, etcd.Bootstrap)
		if err != nil && attempt < 3 {
			continue // a port was taken meanwhile
		}

		if err != nil {
			t.Fatal(err)
		}

		t.Cleanup(srv.Close)

		tlsCfg, err := etcd.ClientTLSConfig(opts.PKIDir)
		if err != nil {
			t.Fatal(err)
		}

		return &Member{Server: srv, Endpoint: opts.AdvertiseClientURLs[0], TLS: tlsCfg}
	}
}

// Client is a new client of the member over the network, closed at
// cleanup; a test may close it earlier to cut a "node" off.
func (m *Member) Client(t testing.TB) *clientv3.Client {
	t.Helper()

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Endpoint}, TLS: m.TLS.Clone(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { cli.Close() })

	return cli
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()

	ports := make([]int, 0, n)

	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}

		defer l.Close()

		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}

	return ports
}
