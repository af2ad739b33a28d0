package apid_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	apidapplet "github.com/talosbox/talosbox/applets/apid"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/applet/applettest"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/talosconfig"
	"github.com/talosbox/talosbox/internal/trustd"
)

func TestMain(m *testing.M) { applettest.Main(m, apidapplet.Applet) }

// cluster is what talosctl gen config writes: a control-plane config and
// a talosconfig with an os:admin certificate, for one cluster.
type cluster struct {
	config      string // controlplane.yaml
	worker      string // worker.yaml
	talosconfig string
	gen         *generate.Output
}

func genConfig(t *testing.T, dir string) cluster {
	t.Helper()

	out, err := generate.Generate(generate.Options{ClusterName: "alone", Endpoint: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}

	cp, err := out.ControlPlane.Encode()
	if err != nil {
		t.Fatal(err)
	}

	admin, err := out.Secrets.AdminCertificate([]string{"os:admin"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	tc, err := talosconfig.New("alone", []string{"127.0.0.1"}, out.Secrets.Certs.OS.Crt, admin).Bytes()
	if err != nil {
		t.Fatal(err)
	}

	worker, err := out.Worker.Encode()
	if err != nil {
		t.Fatal(err)
	}

	c := cluster{config: filepath.Join(dir, "controlplane.yaml"), worker: filepath.Join(dir, "worker.yaml"), talosconfig: filepath.Join(dir, "talosconfig"), gen: out}
	for path, data := range map[string][]byte{c.config: cp, c.worker: worker, c.talosconfig: tc} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	return c
}

// startAPID runs the applet on a loopback port and returns its address
// once it serves in mode ("mutual TLS" or "maintenance mode").
func startAPID(t *testing.T, mode string, args ...string) (string, *applettest.Process) {
	t.Helper()

	addr := fmt.Sprintf("127.0.0.1:%d", applettest.FreePort(t))
	p := applettest.Start(t, applettest.Command("apid", append(args, "--listen", addr)...))
	p.WaitLine("apid serving on "+addr+" ("+mode, 30*time.Second)

	return addr, p
}

// dial is the project's client with the talosconfig's credentials, as
// talosctl -e ADDR uses them.
func dial(t *testing.T, talosconfigPath, addr string) *client.Client {
	t.Helper()

	cfg, err := talosconfig.Load(talosconfigPath)
	if err != nil {
		t.Fatal(err)
	}

	_, ctx, err := cfg.Current("")
	if err != nil {
		t.Fatal(err)
	}

	opts, err := client.OptionsFromContext(ctx, []string{addr})
	if err != nil {
		t.Fatal(err)
	}

	c, err := client.New(opts)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { c.Close() })

	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)

	return ctx
}

// checkServes calls the node as an admin: version and the machine config.
func checkServes(t *testing.T, c *client.Client) {
	t.Helper()

	v, err := c.Machine.Version(ctxT(t), &emptypb.Empty{})
	if err != nil {
		t.Fatalf("version: %v", err)
	}

	if m := v.GetMessages(); len(m) != 1 || m[0].GetVersion().GetTag() == "" || m[0].GetMaintenance() {
		t.Errorf("version: %v", v)
	}

	mc, err := c.Resource.Get(ctxT(t), &resource.GetRequest{Type: "machineconfig", Id: "v1alpha1"})
	if err != nil {
		t.Fatalf("get machineconfig: %v", err)
	}

	if spec := string(mc.GetResource().GetSpecYaml()); !strings.Contains(spec, "clusterName: alone") {
		t.Errorf("machineconfig spec:\n%s", spec)
	}
}

// apid alone serves the node API from a generated config: the
// talosconfig's admin gets answers, a client without a certificate is
// refused in the handshake, and a restart without --config serves the
// config the state dir kept.
func TestServesGeneratedConfig(t *testing.T) {
	dir := t.TempDir()
	c := genConfig(t, dir)
	state := filepath.Join(dir, "state")

	addr, p := startAPID(t, "mutual TLS", "--state-dir", state, "--config", c.config)
	checkServes(t, dial(t, c.talosconfig, addr))

	anon, err := client.New(client.Options{Endpoints: []string{addr}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()

	if _, err := anon.Machine.Version(ctxT(t), &emptypb.Empty{}); status.Code(err) != codes.Unavailable {
		t.Errorf("a client without a certificate: %v, want it refused (Unavailable)", err)
	}

	// Why, as the TLS alert says it: gRPC reports whichever of its writes
	// or reads failed first.
	if err := handshakeWithoutCert(addr); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("handshake without a client certificate: %v, want the alert \"certificate required\"", err)
	}

	if code := p.Stop(30 * time.Second); code != 0 {
		t.Fatalf("apid exited %d after SIGTERM", code)
	}

	p.WaitLine("apid: stopped", time.Second)

	addr, p = startAPID(t, "mutual TLS", "--state-dir", state)
	checkServes(t, dial(t, c.talosconfig, addr))

	if code := p.Stop(30 * time.Second); code != 0 {
		t.Fatalf("apid exited %d after SIGTERM", code)
	}
}

// handshakeWithoutCert speaks TLS 1.3 to addr without a client
// certificate and returns what the server answers once the handshake is
// over: in TLS 1.3 the server checks the client's certificate after the
// client has finished, so the refusal comes with the first read.
func handshakeWithoutCert(addr string) error {
	conn, err := tls.Dial("tcp", addr, &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // only the server's refusal matters here
	if err != nil {
		return err
	}
	defer conn.Close()

	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return err
	}

	_, err = conn.Read(make([]byte, 1))

	return err
}

// A worker config has no CA key: apid alone gets its server certificate
// from the trustd --trustd names (here the library, serving the control
// plane's CA and token), then serves the cluster's clients.
func TestWorkerCertificateFromTrustd(t *testing.T) {
	dir := t.TempDir()
	c := genConfig(t, dir)
	m := c.gen.ControlPlane.Machine
	ca := &pki.CertAndKey{Crt: m.CA.Crt, Key: m.CA.Key}

	srv, err := trustd.NewServer(trustd.Options{
		CA: ca, Token: m.Token,
		ServerCert: trustd.ServerCertificate(ca, pki.ServerOptions{CommonName: "cp", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}),
	})
	if err != nil {
		t.Fatal(err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)

	go func() { served <- srv.Serve(ctx, lis) }()

	t.Cleanup(func() {
		cancel()

		if err := <-served; err != nil {
			t.Errorf("trustd: %v", err)
		}
	})

	addr, p := startAPID(t, "mutual TLS", "--state-dir", filepath.Join(dir, "state"), "--config", c.worker, "--trustd", lis.Addr().String())

	v, err := dial(t, c.talosconfig, addr).Machine.Version(ctxT(t), &emptypb.Empty{})
	if err != nil || v.GetMessages()[0].GetMaintenance() {
		t.Fatalf("version from the worker: %v %v", v, err)
	}

	if code := p.Stop(30 * time.Second); code != 0 {
		t.Fatalf("apid exited %d after SIGTERM", code)
	}
}

// Without a config apid serves maintenance mode, as a new node does.
func TestMaintenanceMode(t *testing.T) {
	addr, _ := startAPID(t, "maintenance mode", "--state-dir", t.TempDir())

	anon, err := client.New(client.Options{Endpoints: []string{addr}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()

	v, err := anon.Machine.Version(ctxT(t), &emptypb.Empty{})
	if err != nil || !v.GetMessages()[0].GetMaintenance() {
		t.Fatalf("version in maintenance mode: %v %v", v, err)
	}
}

// Bad flags and inputs are refused before anything is served.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	c := genConfig(t, dir)

	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}

		return p
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	state := filepath.Join(dir, "state")

	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help", []string{"--help"}, 0, "Usage: apid --state-dir DIR"},
		{"no state dir", []string{"--config", c.config}, 2, "apid: --state-dir DIR is required"},
		{"argument", []string{"--state-dir", state, "serve"}, 2, `unexpected argument "serve"`},
		{"unknown flag", []string{"--state-dir", state, "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"missing config", []string{"--state-dir", state, "--config", filepath.Join(dir, "nope.yaml")}, 1, "read config: open " + filepath.Join(dir, "nope.yaml")},
		{"unknown field", []string{"--state-dir", state, "--config", write("typo.yaml", "version: v1alpha1\nmachine:\n  tpye: worker\n")}, 1, "typo.yaml"},
		{"invalid config", []string{"--state-dir", state, "--config", write("bad.yaml", "version: v1alpha1\nmachine:\n  type: bogus\n")}, 1, "bad.yaml"},
		{"port taken", []string{"--state-dir", state, "--config", c.config, "--listen", busy.Addr().String()}, 1, "address already in use"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer

			code := apidapplet.Main(context.Background(), tt.args, applet.Env{Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}

	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("a refused start touched the state dir: %v", err)
	}
}
