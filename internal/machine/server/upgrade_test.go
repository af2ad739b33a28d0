package server

import (
	"context"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/pki"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// startEtcd runs a one-member embedded etcd for the lock's tests.
func startEtcd(t *testing.T) *etcd.Server {
	t.Helper()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "etcd", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	lo := netip.MustParseAddr("127.0.0.1")

	for attempt := 1; ; attempt++ {
		ports := make([]int, 2)

		for i := range ports {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}

			ports[i] = l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a TCP listener
			l.Close()
		}

		dir := t.TempDir()
		o := etcd.Options{
			Name: "cp-1", DataDir: filepath.Join(dir, "data"), PKIDir: filepath.Join(dir, "pki"), CA: ca,
			IPs:              []netip.Addr{lo},
			ListenClientURLs: etcd.URLs([]netip.Addr{lo}, ports[0]), ListenPeerURLs: etcd.URLs([]netip.Addr{lo}, ports[1]),
			Log: io.Discard,
		}
		o.AdvertiseClientURLs, o.AdvertisePeerURLs = o.ListenClientURLs, o.ListenPeerURLs

		srv, err := etcd.Start(testCtx(t), o, etcd.Bootstrap)
		if err == nil {
			t.Cleanup(srv.Close)
			return srv
		}

		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
}

// One control plane at a time: a lock another member holds refuses the
// upgrade; the member's own lock from before its reboot does not.
func TestUpgradeLock(t *testing.T) {
	srv := startEtcd(t)
	ctx := testCtx(t)

	unlock, err := lockForUpgrade(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}

	// The same member again (it rebooted into the upgrade): its old lock
	// is released, and it takes a new one.
	unlock2, err := lockForUpgrade(ctx, srv)
	if err != nil {
		t.Fatalf("the member's own lock refused it: %v", err)
	}

	unlock2()
	unlock() // its lease was revoked already: harmless

	// Another member holds the lock.
	sess, err := concurrency.NewSession(srv.Client(), concurrency.WithTTL(upgradeLockTTL))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	other := concurrency.NewMutex(sess, UpgradeMutex)
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := lockForUpgrade(ctx, srv); err == nil || !strings.Contains(err.Error(), "another control plane node is being upgraded") {
		t.Fatalf("a lock held by another member: %v", err)
	}

	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	unlock3, err := lockForUpgrade(ctx, srv)
	if err != nil {
		t.Fatalf("the lock once free: %v", err)
	}

	unlock3()

	// A member that never started (its node is down): an upgrade now
	// could leave etcd without a quorum, so it is refused.
	if _, err := srv.Client().MemberAddAsLearner(ctx, []string{"https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}

	if _, err := lockForUpgrade(ctx, srv); err == nil || !strings.Contains(err.Error(), "is not started; all members must be running") {
		t.Fatalf("a member down: %v", err)
	}
}

// testCtx ends with the test, or after a minute.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)

	return ctx
}
