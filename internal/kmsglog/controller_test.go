package kmsglog_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/kmsglog"
	"github.com/talosbox/talosbox/internal/resources/config"
)

// These tests read this machine's real kernel log (root reads and writes
// /dev/kmsg) and write markers into it from user space.

// received is one record an endpoint got, and on which connection.
type received struct {
	conn int
	rec  map[string]any
}

// tcpEndpoint listens on loopback and hands over every line received,
// numbering connections; kill ends the current connections.
type tcpEndpoint struct {
	l     net.Listener
	lines chan received
	conns chan net.Conn
}

func startTCP(t *testing.T, addr string) *tcpEndpoint {
	t.Helper()

	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}

	e := &tcpEndpoint{l: l, lines: make(chan received, 1<<16), conns: make(chan net.Conn, 16)}
	t.Cleanup(func() { l.Close() })

	go func() {
		for n := 1; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}

			e.conns <- c

			go func() {
				defer c.Close()

				sc := bufio.NewScanner(c)
				sc.Buffer(nil, 1<<20)

				for sc.Scan() {
					var m map[string]any
					if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
						m = map[string]any{"invalid": sc.Text()}
					}

					e.lines <- received{conn: n, rec: m}
				}
			}()
		}
	}()

	return e
}

func (e *tcpEndpoint) url() string { return "tcp://" + e.l.Addr().String() + "/" }

// marker writes a unique line into the kernel log at priority 4
// (warning) and returns it.
func marker(t *testing.T) string {
	t.Helper()

	m := "talosbox-kmsglog-test-" + rand.Text()

	f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("this test writes the kernel log as root: %v", err)
	}
	defer f.Close()

	if _, err := fmt.Fprintf(f, "<4>%s\n", m); err != nil {
		t.Fatal(err)
	}

	return m
}

// await waits for the record holding text, skipping the others.
func await(t *testing.T, lines <-chan received, text string) received {
	t.Helper()

	deadline := time.After(30 * time.Second)

	for {
		select {
		case r := <-lines:
			if r.rec["msg"] == text+"\n" {
				return r
			}
		case <-deadline:
			t.Fatalf("no record %q arrived", text)
		}
	}
}

// logHook hands the controller's log messages to a test.
type logHook struct{ fn func(string) }

func (logHook) Enabled(context.Context, slog.Level) bool { return true }

func (h logHook) Handle(_ context.Context, r slog.Record) error {
	if h.fn != nil {
		h.fn(r.Message)
	}

	return nil
}

func (h logHook) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logHook) WithGroup(string) slog.Handler      { return h }

// node runs the controller on a bus and sets the machine config.
type node struct {
	store *bus.Store
}

func startNode(t *testing.T, onLog func(msg string)) *node {
	t.Helper()

	store := bus.NewStore(bus.StoreOptions{})
	rt := bus.NewRuntime(store, bus.RuntimeOptions{Logger: slog.New(logHook{onLog})})

	if err := rt.Register(&kmsglog.Controller{}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		rt.Run(ctx) //nolint:errcheck // ends with the test
	}()

	t.Cleanup(func() { cancel(); <-done })

	return &node{store: store}
}

func (n *node) configure(t *testing.T, urls ...string) {
	t.Helper()

	var docs []configs.Document
	for i, u := range urls {
		docs = append(docs, &configs.KmsgLogConfig{Name: fmt.Sprintf("log-%d", i), URL: u})
	}

	cfg := configs.NewConfig(nil, docs...)

	mc := bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg})
	if _, err := n.store.Modify(context.Background(), mc, func(res bus.Resource) error {
		res.(*config.MachineConfig).TypedSpec().Config = cfg
		return nil
	}, bus.WithOwner("machined")); err != nil {
		t.Fatal(err)
	}
}

// TestDeliveryTCP: the node's kernel log reaches a TCP endpoint in
// Talos's format, from the oldest record on; a connection the endpoint
// drops is made again.
func TestDeliveryTCP(t *testing.T) {
	t.Parallel()

	before := marker(t) // logged before the node looks: sent all the same
	ep := startTCP(t, "127.0.0.1:0")
	n := startNode(t, nil)
	n.configure(t, ep.url())

	first := await(t, ep.lines, before)

	m := marker(t)
	got := await(t, ep.lines, m).rec

	for k, want := range map[string]any{"facility": "user", "priority": "warning", "talos-level": "warn", "msg": m + "\n"} {
		if got[k] != want {
			t.Errorf("%s: %v, want %v (record %v)", k, got[k], want, got)
		}
	}

	if s, c := got["seq"].(float64), first.rec["seq"].(float64); s <= c {
		t.Errorf("seq %v after %v", s, c)
	}

	if _, ok := got["clock"].(float64); !ok {
		t.Errorf("clock %v", got["clock"])
	}

	if ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(got["talos-time"])); err != nil || ts.Location() != time.UTC {
		t.Errorf("talos-time %v: %v", got["talos-time"], err)
	}

	// The endpoint drops the connection. A write into a socket the peer
	// closed may still succeed once (TCP learns of the close from the
	// reply): a marker is written every second until one arrives over a
	// new connection.
	(<-ep.conns).Close()

	sent := map[string]bool{marker(t) + "\n": true}
	tick := time.NewTicker(time.Second)
	deadline := time.After(30 * time.Second)

	defer tick.Stop()

	for {
		select {
		case r := <-ep.lines:
			if r.conn > 1 && sent[fmt.Sprint(r.rec["msg"])] {
				return
			}
		case <-tick.C:
			sent[marker(t)+"\n"] = true
		case <-deadline:
			t.Fatal("no record arrived over a new connection")
		}
	}
}

// TestDeliveryEndpointLate: records logged while the only endpoint is
// down arrive once it listens; the config changes live (to UDP, one
// record a datagram).
func TestDeliveryEndpointLate(t *testing.T) {
	t.Parallel()

	// A port nothing listens on, until the endpoint takes it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	addr := l.Addr().String()
	l.Close()

	unreachable := make(chan struct{}, 1)
	udpSet := make(chan struct{}, 1)
	udpMsg := ""

	var mu sync.Mutex

	n := startNode(t, func(msg string) {
		mu.Lock()
		defer mu.Unlock()

		ch := map[string]chan struct{}{"kmsg log: endpoint unreachable, retrying": unreachable, udpMsg: udpSet}[msg]
		if ch != nil && msg != "" {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	n.configure(t, "tcp://"+addr+"/")

	m := marker(t)

	select {
	case <-unreachable:
	case <-time.After(30 * time.Second):
		t.Fatal("the controller never tried the endpoint")
	}

	ep := startTCP(t, addr)
	await(t, ep.lines, m)

	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { udp.Close() })

	udpURL := "udp://" + udp.LocalAddr().String() + "/"

	mu.Lock()
	udpMsg = "kmsg log: sending to " + udpURL
	mu.Unlock()

	n.configure(t, udpURL)

	// Records logged once the controller sends to UDP go there.
	select {
	case <-udpSet:
	case <-time.After(30 * time.Second):
		t.Fatal("the controller never took the UDP endpoint")
	}

	m = marker(t)
	buf := make([]byte, 65536)

	udp.SetReadDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck // a read past it fails the test

	for {
		k, _, err := udp.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no datagram with %q: %v", m, err)
		}

		var rec map[string]any
		if err := json.Unmarshal(buf[:k], &rec); err != nil {
			t.Fatalf("datagram %q: %v", buf[:k], err)
		}

		if rec["msg"] == m+"\n" {
			if buf[k-1] != '}' {
				t.Errorf("a datagram ends with %q, want the record alone", buf[k-1])
			}

			break
		}
	}
}
