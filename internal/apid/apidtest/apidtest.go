// Package apidtest starts real in-process nodes with their apid, for the
// tests of the node API's clients (internal/client, talosctl): a
// container-mode machine.Node in its own directory, without containerd,
// and apid serving it on a loopback listener.
package apidtest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/apid"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/machine/server"
	"github.com/talosbox/talosbox/internal/platform"
)

// Options describe one node.
type Options struct {
	// Dir holds the node's state; a fresh temporary one when empty.
	Dir string
	// ConfigPath is the machine config file; empty starts the node in
	// maintenance mode.
	ConfigPath string
	// IP is the loopback address apid listens on (127.0.0.1 when empty).
	IP string
	// Name is the node's hostname as apid stamps it.
	Name string
	// MetaPath is a META partition image for the node (it has none
	// otherwise, as a container).
	MetaPath string
}

// Node is a running node and its apid.
type Node struct {
	Name    string
	Addr    string // apid's host:port
	Machine *machine.Node
	Server  *apid.Server
	Console *Buffer
}

// Start boots the node, serves it until the test ends, and returns once
// apid serves: in maintenance mode without a config, with mutual TLS
// otherwise.
func Start(t testing.TB, opts Options) *Node {
	t.Helper()

	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}

	if opts.IP == "" {
		opts.IP = "127.0.0.1"
	}

	p, err := platform.Detect(platform.Options{Flag: platform.Container, StateDir: filepath.Join(opts.Dir, "node")})
	if err != nil {
		t.Fatal(err)
	}

	n := &Node{Name: opts.Name, Console: &Buffer{}}
	ring := events.New(0)

	n.Machine, err = machine.New(machine.Options{
		Platform: p, ConfigPath: opts.ConfigPath, Console: n.Console, NoContainerd: true, StopTimeout: 5 * time.Second,
		MetaPath: opts.MetaPath,
		OnEvent:  func(ev machine.Event) { ring.Publish(ev.Type, ev.Message, ev.Fields) },
	})
	if err != nil {
		t.Fatal(err)
	}

	lis, err := net.Listen("tcp", net.JoinHostPort(opts.IP, "0"))
	if err != nil {
		t.Fatal(err)
	}

	n.Addr = lis.Addr().String()

	// NodePorts: several nodes in one process differ only by port.
	n.Server, err = apid.NewServer(apid.Options{
		Node: n.Machine, Events: ring, Hostname: opts.Name, StopGrace: 2 * time.Second, NodePorts: true,
		Register: server.Registrar(server.Options{Node: n.Machine, Events: ring, Hostname: opts.Name, Log: n.Console}),
	}, n.Console)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)

	go func() { done <- n.Machine.Run(ctx) }()
	go func() { done <- n.Server.Serve(ctx, lis) }()

	t.Cleanup(func() {
		cancel()

		for range 2 {
			if err := <-done; err != nil && !errors.Is(err, machine.ErrPowerOff) && !errors.Is(err, context.Canceled) {
				t.Errorf("%s stopped with %v", opts.Name, err)
			}
		}

		if t.Failed() {
			t.Logf("%s console:\n%s", opts.Name, n.Console)
		}
	})

	waitCtx, waitCancel := context.WithTimeout(ctx, time.Minute)
	defer waitCancel()

	if err := n.Server.WaitServing(waitCtx, opts.ConfigPath == ""); err != nil {
		t.Fatalf("%s never served: %v\n%s", opts.Name, err, n.Console)
	}

	return n
}

// Buffer is a console shared by the node's goroutines; Wait blocks until a
// line containing a marker appears.
type Buffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{}
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()

	if b.more != nil {
		close(b.more)
		b.more = nil
	}

	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()

	return b.b.String()
}

// Wait returns once the console contains s, failing at the deadline.
func (b *Buffer) Wait(t testing.TB, timeout time.Duration, s string) {
	t.Helper()

	deadline := time.After(timeout)

	for {
		b.mu.Lock()
		if strings.Contains(b.b.String(), s) {
			b.mu.Unlock()
			return
		}

		if b.more == nil {
			b.more = make(chan struct{})
		}

		more := b.more
		b.mu.Unlock()

		select {
		case <-more:
		case <-deadline:
			t.Fatalf("timed out waiting for %q; console:\n%s", s, b)
		}
	}
}
