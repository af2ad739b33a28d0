package etcd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

// Raft timers for tests: a tenth of etcd's defaults, so elections and
// promotions take milliseconds, yet loose enough for -race on 2 busy cores.
const (
	testHeartbeat = 10 * time.Millisecond
	testElection  = 100 * time.Millisecond
)

// lockedBuffer collects a member's log while etcd writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()

	return b.buf.Write(p)
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()

	s := b.buf.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}

	return s
}

func newTestCA(t testing.TB) *pki.CertAndKey {
	t.Helper()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "etcd", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	return ca
}

// freePorts finds n free loopback ports. embed binds from URLs, not from
// listeners we could hand over, so a port can be taken again before etcd
// binds it; startMember retries with fresh ports when that happens.
func freePorts(t testing.TB, n int) []int {
	t.Helper()

	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)

	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}

		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}

	for _, l := range listeners {
		_ = l.Close()
	}

	return ports
}

var loopback = netip.MustParseAddr("127.0.0.1")

// testOptions describes a member on loopback with its own dirs and ports.
func testOptions(t testing.TB, ca *pki.CertAndKey, name string) Options {
	t.Helper()

	dir := t.TempDir()
	logs := &lockedBuffer{}

	// Failed tests show the tail of each member's log; ETCD_TEST_LOGS=1
	// shows it always.
	t.Cleanup(func() {
		switch {
		case os.Getenv("ETCD_TEST_LOGS") != "":
			t.Logf("etcd log of %s:\n%s", name, logs.tail(64<<20))
		case t.Failed():
			t.Logf("etcd log of %s (tail):\n%s", name, logs.tail(16<<10))
		}
	})

	o := Options{
		Name:              name,
		DataDir:           filepath.Join(dir, "data"),
		PKIDir:            filepath.Join(dir, "pki"),
		CA:                ca,
		IPs:               []netip.Addr{loopback},
		HeartbeatInterval: testHeartbeat,
		ElectionTimeout:   testElection,
		RetryInterval:     50 * time.Millisecond,
		WaitingInterval:   time.Second,
		Log:               logs,
	}

	return withPorts(t, o)
}

func withPorts(t testing.TB, o Options) Options {
	ports := freePorts(t, 2)
	o.ListenClientURLs = URLs([]netip.Addr{loopback}, ports[0])
	o.AdvertiseClientURLs = o.ListenClientURLs
	o.ListenPeerURLs = URLs([]netip.Addr{loopback}, ports[1])
	o.AdvertisePeerURLs = o.ListenPeerURLs

	return o
}

// startMember starts a member, retrying with fresh ports if another test
// took one of ours, and closes it at the end of the test. It returns the
// options it finally used.
func startMember(t testing.TB, ctx context.Context, o Options, mode Mode) (*Server, Options) {
	t.Helper()

	for attempt := 1; ; attempt++ {
		s, err := Start(ctx, o, mode)
		if err == nil {
			t.Cleanup(s.Close)

			return s, o
		}

		if attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			o = withPorts(t, o)

			continue
		}

		t.Fatalf("start %s (%s): %v", o.Name, mode, err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()

	deadline := time.Now().Add(timeout)

	for {
		err := cond()
		if err == nil {
			return
		}

		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %v", what, timeout, err)
		}

		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

func memberNames(ms []Member) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s(%x learner=%t)", m.Name, m.ID, m.IsLearner))
	}

	return strings.Join(parts, " ")
}
