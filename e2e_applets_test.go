//go:build e2e

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/talosbox/talosbox/internal/applet/applettest"
	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/trustd"
)

// scratchImage builds an image FROM scratch holding nothing but the static
// binary, the smallest container an applet can run in, and removes it at
// cleanup.
func scratchImage(t *testing.T, bin string) string {
	t.Helper()

	dir := t.TempDir()

	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, "talosbox"), data, 0o755); err != nil {
		t.Fatal(err)
	}

	df := "FROM scratch\nCOPY talosbox /talosbox\nENTRYPOINT [\"/talosbox\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}

	tag := fmt.Sprintf("talosbox-applets-test:%06d", rand.IntN(1e6))
	if out, err := docker(t, "build", "-q", "-t", tag, dir); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}

	t.Cleanup(func() { docker(t, "rmi", "-f", tag) }) //nolint:errcheck // best effort

	return tag
}

// appletContainer runs `talosbox ARGS...` in a container of image on the
// host's network, unprivileged, with dir mounted at /data. The container
// is removed at cleanup; SIGTERM to the returned process reaches the
// applet through docker run's signal proxy.
func appletContainer(t *testing.T, image, dir string, args ...string) *applettest.Process {
	t.Helper()

	name := fmt.Sprintf("tbapplet-%06d", rand.IntN(1e6))

	t.Cleanup(func() { docker(t, "rm", "-f", name) }) //nolint:errcheck // gone already when it exited

	return applettest.Start(t, exec.Command("docker", append([]string{"run", "--rm", "--name", name, "--network", "host",
		"-v", dir + ":/data", image}, args...)...))
}

func stopContainer(t *testing.T, p *applettest.Process) {
	t.Helper()

	if code := p.Stop(30 * time.Second); code != 0 {
		t.Fatalf("the applet exited %d after SIGTERM", code)
	}
}

// The service applets run alone in a container that holds nothing but
// the binary, as the README shows them: etcd keeps its data across a
// restart, trustd issues only to token holders, apid serves the node API
// of a generated config to talosctl, networkd configures the container's
// own network namespace with no more than NET_ADMIN.
func TestAppletsInContainers(t *testing.T) {
	bin := buildBinary(t)
	image := scratchImage(t, bin)

	t.Run("etcd", func(t *testing.T) { testEtcdContainer(t, image) })
	t.Run("trustd", func(t *testing.T) { testTrustdContainer(t, image) })
	t.Run("apid", func(t *testing.T) { testAPIDContainer(t, bin, image) })
	t.Run("networkd", func(t *testing.T) { testNetworkdContainer(t, image) })
}

func testEtcdContainer(t *testing.T, image string) {
	dir := t.TempDir()
	endpoint := fmt.Sprintf("https://127.0.0.1:%d", applettest.FreePort(t))
	args := []string{"etcd", "--data-dir", "/data/etcd", "--name", "alone",
		"--listen-client-urls", endpoint, "--listen-peer-urls", fmt.Sprintf("https://127.0.0.1:%d", applettest.FreePort(t)),
		"--arg", "heartbeat-interval=10", "--arg", "election-timeout=100", "--arg", "log-level=warn"}

	kv := func() clientv3.KV {
		tlsCfg, err := etcd.ClientTLSConfig(filepath.Join(dir, "etcd-pki"))
		if err != nil {
			t.Fatal(err)
		}

		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}

		t.Cleanup(func() { cli.Close() })

		return cli
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	p := appletContainer(t, image, dir, args...)
	p.WaitLine("etcd: member alone", 30*time.Second)

	if _, err := kv().Put(ctx, "/in/a/container", "kept"); err != nil {
		t.Fatal(err)
	}

	stopContainer(t, p)

	p = appletContainer(t, image, dir, args...)
	if line := p.WaitLine("etcd: member alone", 30*time.Second); !strings.Contains(line, "resumed") {
		t.Errorf("second start: %s", line)
	}

	resp, err := kv().Get(ctx, "/in/a/container")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "kept" {
		t.Errorf("after a restart: %v %v", resp, err)
	}

	stopContainer(t, p)
}

func testTrustdContainer(t *testing.T, image string) {
	dir := t.TempDir()

	ca, err := pki.NewCA(pki.CAOptions{Organization: "talos", KeyType: pki.ECDSAP256})
	if err != nil {
		t.Fatal(err)
	}

	for name, data := range map[string][]byte{"ca.crt": ca.Crt, "ca.key": ca.Key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	addr := fmt.Sprintf("127.0.0.1:%d", applettest.FreePort(t))
	p := appletContainer(t, image, dir, "trustd", "--ca-cert", "/data/ca.crt", "--ca-key", "/data/ca.key",
		"--token", "abcdef.0123456789abcdef", "--listen", addr)
	p.WaitLine("serving on "+addr, 30*time.Second)

	trust, err := pki.CertPool(ca.Crt)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	req := trustd.SignRequest{Endpoints: []string{addr}, Token: "abcdef.0123456789abcdef", Trust: trust, MaxBackoff: 100 * time.Millisecond}

	// IssueServerCertificate verifies what comes back against the CA.
	if _, err := trustd.IssueServerCertificate(ctx, req, trustd.ServerOptions{CommonName: "worker", IPs: []net.IP{net.ParseIP("10.5.0.9")}}); err != nil {
		t.Errorf("with the token: %v", err)
	}

	req.Token = "uvwxyz.0123456789abcdef"
	if _, err := trustd.IssueServerCertificate(ctx, req, trustd.ServerOptions{CommonName: "worker", IPs: []net.IP{net.ParseIP("10.5.0.9")}}); err == nil || !strings.Contains(err.Error(), "wrong token") {
		t.Errorf("with a wrong token: %v", err)
	}

	stopContainer(t, p)
}

func testAPIDContainer(t *testing.T, bin, image string) {
	dir := t.TempDir()

	talosctl := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"talosctl"}, args...)...).CombinedOutput()
		return string(out), err
	}

	if out, err := talosctl("gen", "config", "alone", "https://127.0.0.1:6443", "--output-dir", dir); err != nil {
		t.Fatalf("gen config: %v\n%s", err, out)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", applettest.FreePort(t))
	p := appletContainer(t, image, dir, "apid", "--state-dir", "/data/state", "--config", "/data/controlplane.yaml", "--listen", addr)
	p.WaitLine("apid serving on "+addr+" (mutual TLS)", 30*time.Second)

	api := []string{"--talosconfig", filepath.Join(dir, "talosconfig"), "-e", addr, "-n", "127.0.0.1"}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"version"}, "Server:"},
		{[]string{"get", "machineconfig"}, "MachineConfig   v1alpha1"},
	} {
		if out, err := talosctl(append(api, tt.args...)...); err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("talosctl %s: %v\n%s", strings.Join(tt.args, " "), err, out)
		}
	}

	// A client without a certificate (maintenance mode's --insecure) is
	// refused: the node has a config, so it wants mutual TLS, and the
	// client reads the node's TLS alert as its verdict.
	if out, err := talosctl("version", "--insecure", "-n", addr); err == nil || strings.Contains(out, "Server:") || !strings.Contains(out, "certificate required") {
		t.Errorf("talosctl --insecure: %v, want it refused:\n%s", err, out)
	}

	stopContainer(t, p)
}

func testNetworkdContainer(t *testing.T, image string) {
	dir := t.TempDir()
	cfg := "version: v1alpha1\nmachine:\n  type: worker\n  network:\n    hostname: boxed\n" +
		"    interfaces:\n      - interface: eth1\n        addresses: [10.99.0.2/24]\n        mtu: 1400\n"

	if err := os.WriteFile(filepath.Join(dir, "machine.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	name := fmt.Sprintf("tbapplet-%06d", rand.IntN(1e6))

	t.Cleanup(func() { docker(t, "rm", "-f", name) }) //nolint:errcheck // gone already when it exited

	p := applettest.Start(t, exec.Command("docker", "run", "--rm", "--name", name, "--network", "none", "--cap-add", "NET_ADMIN",
		"-v", dir+":/data", image, "networkd", "--config", "/data/machine.yaml", "--hostname-file", "/data/hostname"))
	p.WaitLine("[networkd] address=false", 30*time.Second) // up, waiting for eth1

	pid, err := docker(t, "inspect", "-f", "{{.State.Pid}}", name)
	if err != nil {
		t.Fatalf("docker inspect: %v: %s", err, pid)
	}

	// The link appears later, as a hot-plugged NIC would: networkd
	// configures it then.
	host := fmt.Sprintf("vtb%06d", rand.IntN(1e6))
	if out, err := exec.Command("ip", "link", "add", host, "type", "veth", "peer", "name", "eth1", "netns", strings.TrimSpace(pid)).CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v: %s", err, out)
	}

	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() }) //nolint:errcheck // gone with the container

	p.WaitLine("[networkd] address=true", 30*time.Second)

	out, err := exec.Command("nsenter", "-t", strings.TrimSpace(pid), "-n", "ip", "addr", "show", "dev", "eth1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "inet 10.99.0.2/24") || !strings.Contains(string(out), "mtu 1400") {
		t.Errorf("eth1 in the container: %v\n%s", err, out)
	}

	if b, err := os.ReadFile(filepath.Join(dir, "hostname")); err != nil || string(b) != "boxed\n" {
		t.Errorf("hostname file: %q %v", b, err)
	}

	stopContainer(t, p)
}
