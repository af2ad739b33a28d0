package apid

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/events"
	imachine "github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/machine/server"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 60 * time.Second

var (
	bundleOnce sync.Once
	bundle     *pki.Bundle
)

// osCA is the OS CA of the test cluster, with its key.
func osCA() *pki.CertAndKey {
	bundleOnce.Do(func() {
		var err error
		if bundle, err = pki.NewBundle(pki.BundleOptions{}); err != nil {
			panic(err)
		}
	})

	return &bundle.Certs.OS
}

// nodeConfig is a generated config of the test cluster, patched.
// hostname is a patch giving the node a static hostname: its
// HostnameConfig document, as generated configs have one (Talos 1.12 on).
func hostname(name string) string {
	return "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: " + name + "\n"
}

func nodeConfig(tb testing.TB, worker bool, patches ...string) []byte {
	tb.Helper()

	data, err := makeConfig(worker, patches...)
	if err != nil {
		tb.Fatal(err)
	}

	return data
}

func makeConfig(worker bool, patches ...string) ([]byte, error) {
	osCA()

	out, err := generate.Generate(generate.Options{ClusterName: "test", Endpoint: "https://10.5.0.2:6443", Secrets: bundle})
	if err != nil {
		return nil, err
	}

	cfg := out.ControlPlane
	if worker {
		cfg = out.Worker
	}

	data, err := cfg.Encode()
	if err != nil {
		return nil, err
	}

	for _, p := range patches {
		ps, err := configpatch.Parse([]byte(p))
		if err != nil {
			return nil, err
		}

		if data, err = configpatch.Apply(data, ps...); err != nil {
			return nil, err
		}
	}

	return data, nil
}

// syncBuffer is a console several goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.b.String()
}

// env is one node with its apid.
type env struct {
	node    *imachine.Node
	srv     *Server
	ring    *events.Ring
	addr    string // apid's host:port
	host    string // the hostname apid stamps
	console *syncBuffer
	stop    func() error
}

// startEnv runs a container-mode node in dir with config (nil: maintenance
// mode) and its apid on listen (e.g. "127.0.0.1:0"). stop ends both.
func startEnv(dir string, config []byte, listen string, tweaks ...func(*imachine.Options)) (*env, error) {
	return startEnvWith(dir, config, listen, nil, tweaks...)
}

// startEnvWith is startEnv with a say on apid's options too.
func startEnvWith(dir string, config []byte, listen string, apidTweak func(*Options), tweaks ...func(*imachine.Options)) (*env, error) {
	var path string

	if config != nil {
		path = filepath.Join(dir, "input.yaml")
		if err := os.WriteFile(path, config, 0o600); err != nil {
			return nil, err
		}
	}

	p, err := platform.Detect(platform.Options{Flag: platform.Container, StateDir: dir})
	if err != nil {
		return nil, err
	}

	e := &env{console: &syncBuffer{}, ring: events.New(0)}

	opts := imachine.Options{
		Platform: p, ConfigPath: path, Console: e.console, NoContainerd: true, StopTimeout: 5 * time.Second,
		OnEvent: func(ev imachine.Event) { e.ring.Publish(ev.Type, ev.Message, ev.Fields) },
	}

	for _, tweak := range tweaks {
		tweak(&opts)
	}

	e.node, err = imachine.New(opts)
	if err != nil {
		return nil, err
	}

	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}

	e.addr = lis.Addr().String()

	srvOpts := Options{Node: e.node, Events: e.ring, StopGrace: 2 * time.Second, NodePorts: true}
	if apidTweak != nil {
		apidTweak(&srvOpts)
	}

	if srvOpts.Register == nil {
		srvOpts.Register = server.Registrar(server.Options{
			Node: e.node, Plane: srvOpts.Plane, Events: e.ring, Hostname: srvOpts.Hostname, Log: e.console,
		})
	}

	e.srv, err = NewServer(srvOpts, e.console)
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	nodeDone := make(chan error, 1)
	srvDone := make(chan error, 1)

	go func() { nodeDone <- e.node.Run(ctx) }()
	go func() { srvDone <- e.srv.Serve(ctx, lis) }()

	e.stop = func() error {
		cancel()

		var errs []error

		for _, ch := range []chan error{srvDone, nodeDone} {
			select {
			case err := <-ch:
				if err != nil && !errors.Is(err, imachine.ErrPowerOff) {
					errs = append(errs, err)
				}
			case <-time.After(testTimeout):
				errs = append(errs, errors.New("did not stop"))
			}
		}

		return errors.Join(errs...)
	}

	return e, nil
}

// newEnv is startEnv for one test, stopped at its end.
func newEnv(t testing.TB, config []byte, listen string) *env {
	t.Helper()

	return newEnvWith(t, config, listen, nil)
}

// newEnvWith is newEnv with a say on apid's options.
func newEnvWith(t testing.TB, config []byte, listen string, apidTweak func(*Options)) *env {
	t.Helper()

	e, err := startEnvWith(t.TempDir(), config, listen, apidTweak)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}

		if t.Failed() {
			t.Logf("console:\n%s", e.console.String())
		}
	})

	return e
}

// waitServing waits until apid serves in the mode asked for.
func (e *env) waitServing(tb testing.TB, maintenance bool) {
	tb.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	if err := e.srv.WaitServing(ctx, maintenance); err != nil {
		tb.Fatalf("apid never served (maintenance=%t): %v\nconsole:\n%s", maintenance, err, e.console.String())
	}

	e.host = e.srv.identity().hostname
}

// waitReady waits until the node says it is ready.
func (e *env) waitReady(tb testing.TB) {
	tb.Helper()
	e.waitStatus(tb, "ready", func(s runtime.MachineStatusSpec) bool { return s.Status.Ready })
}

// waitStatus waits until the node's MachineStatus satisfies ok. The status
// controller writes it on its own schedule, so apid can serve before it says
// what a test is about to read through the API.
func (e *env) waitStatus(tb testing.TB, what string, ok func(runtime.MachineStatusSpec) bool) {
	tb.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	w, err := e.node.Store().Watch(ctx, bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStatusType, ID: runtime.MachineID})
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()

	for ev := range w.Events() {
		if st, isStatus := ev.Resource.(*runtime.MachineStatus); isStatus && ok(*st.TypedSpec()) {
			return
		}
	}

	tb.Fatalf("node never became %s\nconsole:\n%s", what, e.console.String())
}

// clientCert issues a client certificate from the cluster's OS CA.
func clientCert(tb testing.TB, roles ...string) *pki.CertAndKey {
	tb.Helper()

	c, err := pki.NewClientCertificate(osCA(), pki.ClientOptions{Roles: roles})
	if err != nil {
		tb.Fatal(err)
	}

	return c
}

// dial connects with mutual TLS, verifying the server against the OS CA.
func dial(tb testing.TB, addr string, cert *pki.CertAndKey) *grpc.ClientConn {
	tb.Helper()

	pool, err := pki.CertPool(osCA().Crt)
	if err != nil {
		tb.Fatal(err)
	}

	host, _, _ := net.SplitHostPort(addr)
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: host}

	if cert != nil {
		c, err := cert.TLSCertificate()
		if err != nil {
			tb.Fatal(err)
		}

		// Presented whatever CAs the server asks for, so the server, not
		// the client's choice, decides.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}

	return dialTLS(tb, addr, cfg)
}

// dialInsecure is `talosctl --insecure`: no server verification, no
// client certificate.
func dialInsecure(tb testing.TB, addr string) *grpc.ClientConn {
	tb.Helper()

	return dialTLS(tb, addr, &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}) //nolint:gosec // maintenance mode
}

func dialTLS(tb testing.TB, addr string, cfg *tls.Config) *grpc.ClientConn {
	tb.Helper()

	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		tb.Fatal(err)
	}

	tb.Cleanup(func() { cc.Close() })

	return cc
}

func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	tb.Cleanup(cancel)

	return ctx
}

// withNode routes a call to node, as talosctl -n does.
func withNode(ctx context.Context, node string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, mdNode, node)
}

// wantCode fails unless err is a status with code (and, if given, a
// message containing substr).
func wantCode(tb testing.TB, err error, code codes.Code, substr string) {
	tb.Helper()

	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), substr) {
		tb.Fatalf("got %v (%v), want %v containing %q", st.Code(), err, code, substr)
	}
}

func machineClient(cc *grpc.ClientConn) machine.MachineServiceClient {
	return machine.NewMachineServiceClient(cc)
}

func resourceClient(cc *grpc.ClientConn) resource.ResourceServiceClient {
	return resource.NewResourceServiceClient(cc)
}

// shared is one running control-plane node for the tests that do not
// change it; TestMain starts it.
var shared *env

func TestMain(m *testing.M) {
	code, err := runMain(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}

	os.Exit(code)
}

func runMain(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "apid-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)

	cfg, err := makeConfig(false, hostname("node-a"))
	if err != nil {
		return 0, err
	}

	if shared, err = startEnv(dir, cfg, "127.0.0.1:0"); err != nil {
		return 0, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	err = shared.srv.WaitServing(ctx, false)

	cancel()

	if err != nil {
		return 0, fmt.Errorf("shared node: %w\n%s", err, shared.console.String())
	}

	shared.host = shared.srv.identity().hostname
	code := m.Run()

	if err := shared.stop(); err != nil {
		return code, fmt.Errorf("shared node: %w", err)
	}

	return code, nil
}
