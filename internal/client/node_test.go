package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/apid"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/platform"
)

// The client is tested against real nodes: a container-mode machine.Node
// with its apid, in this process, on a loopback address. Test files are
// not in the client's import graph, so the client itself still imports
// no node-side package.

// secrets are one cluster's, shared by the nodes of a test binary.
var secrets = sync.OnceValues(func() (*pki.Bundle, error) { return pki.NewBundle(pki.BundleOptions{}) })

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.String()
}

// testNode is a running node; addr is its apid's host:port.
type testNode struct {
	name string
	addr string
}

// startNode boots a node named name whose apid listens on ip (port chosen
// by the kernel). configured false leaves it in maintenance mode.
func startNode(t *testing.T, ip, name string, configured bool) *testNode {
	t.Helper()

	b, err := secrets()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cfgPath := ""

	if configured {
		out, err := generate.Generate(generate.Options{ClusterName: "client", Endpoint: "https://127.0.0.1:6443", Secrets: b})
		if err != nil {
			t.Fatal(err)
		}

		data, err := out.ControlPlane.Encode()
		if err != nil {
			t.Fatal(err)
		}

		// The certificate names the address the node is dialled on.
		patch, err := configpatch.Parse(fmt.Appendf(nil, "machine: {network: {hostname: %s}, certSANs: [%s]}", name, ip))
		if err != nil {
			t.Fatal(err)
		}

		if data, err = configpatch.Apply(data, patch...); err != nil {
			t.Fatal(err)
		}

		cfgPath = filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	p, err := platform.Detect(platform.Options{Flag: platform.Container, StateDir: filepath.Join(dir, "node")})
	if err != nil {
		t.Fatal(err)
	}

	console := &lockedBuffer{}
	ring := events.New(0)

	node, err := machine.New(machine.Options{
		Platform: p, ConfigPath: cfgPath, Console: console, NoContainerd: true, StopTimeout: 5 * time.Second,
		OnEvent: func(ev machine.Event) { ring.Publish(ev.Type, ev.Message, ev.Fields) },
	})
	if err != nil {
		t.Fatal(err)
	}

	lis, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}

	srv, err := apid.NewServer(apid.Options{Node: node, Events: ring, Hostname: name, StopGrace: 2 * time.Second, NodePorts: true}, console)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)

	go func() { done <- node.Run(ctx) }()
	go func() { done <- srv.Serve(ctx, lis) }()

	t.Cleanup(func() {
		cancel()

		for range 2 {
			if err := <-done; err != nil && !errors.Is(err, machine.ErrPowerOff) && !errors.Is(err, context.Canceled) {
				t.Errorf("%s stopped with %v", name, err)
			}
		}

		if t.Failed() {
			t.Logf("%s console:\n%s", name, console.String())
		}
	})

	waitCtx, waitCancel := context.WithTimeout(ctx, time.Minute)
	defer waitCancel()

	if err := srv.WaitServing(waitCtx, !configured); err != nil {
		t.Fatalf("%s never served: %v\n%s", name, err, console.String())
	}

	return &testNode{name: name, addr: lis.Addr().String()}
}

// adminCredentials are an os:admin client certificate of the cluster.
func adminCredentials(t *testing.T) (ca []byte, crt *pki.CertAndKey) {
	t.Helper()

	b, err := secrets()
	if err != nil {
		t.Fatal(err)
	}

	crt, err = pki.NewClientCertificate(&b.Certs.OS, pki.ClientOptions{Roles: []string{"os:admin"}})
	if err != nil {
		t.Fatal(err)
	}

	return b.Certs.OS.Crt, crt
}

func newClient(t *testing.T, endpoints ...string) *client.Client {
	t.Helper()

	ca, crt := adminCredentials(t)

	c, err := client.New(client.Options{Endpoints: endpoints, CA: ca, Crt: crt.Crt, Key: crt.Key, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { c.Close() })

	return c
}
