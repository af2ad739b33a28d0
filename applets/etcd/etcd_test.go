package etcd_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdapplet "github.com/talosbox/talosbox/applets/etcd"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/applet/applettest"
	"github.com/talosbox/talosbox/internal/etcd"
)

func TestMain(m *testing.M) { applettest.Main(m, etcdapplet.Applet) }

// Fast raft timers (etcd's flags, in ms), so a member elects itself in
// milliseconds; the log only shows problems.
var fastArgs = []string{"--arg", "heartbeat-interval=10", "--arg", "election-timeout=100", "--arg", "log-level=warn"}

// member is one etcd applet process on loopback ports of its own.
type member struct {
	name     string
	dataDir  string
	client   string // client URL
	peer     string // peer URL
	proc     *applettest.Process
	startArg []string
}

func newMember(t *testing.T, dir, name string, extra ...string) *member {
	t.Helper()

	m := &member{
		name:    name,
		dataDir: filepath.Join(dir, name),
		client:  fmt.Sprintf("https://127.0.0.1:%d", applettest.FreePort(t)),
		peer:    fmt.Sprintf("https://127.0.0.1:%d", applettest.FreePort(t)),
	}

	m.startArg = append([]string{"--data-dir", m.dataDir, "--name", name,
		"--listen-client-urls", m.client, "--listen-peer-urls", m.peer}, append(fastArgs, extra...)...)

	return m
}

// start runs the member and waits until it serves, as its line says.
func (m *member) start(t *testing.T, want string) {
	t.Helper()

	m.proc = applettest.Start(t, applettest.Command("etcd", m.startArg...))
	line := m.proc.WaitLine("etcd: member "+m.name, 30*time.Second)

	if !strings.Contains(line, want) || !strings.Contains(line, "serving clients on "+m.client) {
		t.Fatalf("start line %q, want %q and the client URL", line, want)
	}
}

// stop sends SIGTERM and expects a clean exit.
func (m *member) stop(t *testing.T) {
	t.Helper()

	if code := m.proc.Stop(30 * time.Second); code != 0 {
		t.Fatalf("%s exited %d after SIGTERM", m.name, code)
	}

	m.proc.WaitLine("etcd: stopped", time.Second)
}

func (m *member) pkiDir() string { return m.dataDir + "-pki" }

// dial is an etcd client over the network with the admin certificate the
// member issued, as etcdctl would be used.
func (m *member) dial(t *testing.T) *clientv3.Client {
	t.Helper()

	tlsCfg, err := etcd.ClientTLSConfig(m.pkiDir())
	if err != nil {
		t.Fatal(err)
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.client}, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { cli.Close() })

	return cli
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)

	return ctx
}

func get(t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()

	resp, err := cli.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}

	if len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %d keys", key, len(resp.Kvs))
	}

	return string(resp.Kvs[0].Value)
}

// A new member bootstraps, serves a real client, stops cleanly on SIGTERM
// and, started again on the same data dir, resumes with the data.
func TestBootstrapStopResume(t *testing.T) {
	m := newMember(t, t.TempDir(), "m1")
	m.start(t, "bootstrapped a new cluster")

	if !strings.Contains(m.proc.Output(), "made a new etcd CA in "+m.pkiDir()) {
		t.Errorf("no word of the new CA:\n%s", m.proc.Output())
	}

	if _, err := m.dial(t).Put(ctxT(t), "/talosbox/applet", "alone"); err != nil {
		t.Fatal(err)
	}

	m.stop(t)

	// The same command line again: the data dir now holds the member, and
	// the CA kept in the PKI dir signs its certificates again.
	m.start(t, "resumed")

	if got := get(t, m.dial(t), "/talosbox/applet"); got != "alone" {
		t.Errorf("after restart the key holds %q", got)
	}

	m.stop(t)
}

// A second member joins through the first one's client URL with its CA,
// is promoted, and sees the first one's data.
func TestJoin(t *testing.T) {
	dir := t.TempDir()

	m1 := newMember(t, dir, "m1")
	m1.start(t, "bootstrapped a new cluster")

	if _, err := m1.dial(t).Put(ctxT(t), "/joined", "yes"); err != nil {
		t.Fatal(err)
	}

	m2 := newMember(t, dir, "m2", "--join", m1.client,
		"--ca-cert", filepath.Join(m1.pkiDir(), etcd.CACertFile), "--ca-key", filepath.Join(m1.pkiDir(), etcdapplet.CAKeyFile))
	m2.start(t, "joined the cluster as a learner")
	m2.proc.WaitLine("etcd: member m2 is a voting member", 30*time.Second)

	cli := m2.dial(t)
	if got := get(t, cli, "/joined"); got != "yes" {
		t.Errorf("m2 reads %q", got)
	}

	members, err := cli.MemberList(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}

	var names []string

	for _, mb := range members.Members {
		if mb.IsLearner {
			t.Errorf("%s is still a learner", mb.Name)
		}

		names = append(names, mb.Name)
	}

	if strings.Join(names, ",") != "m1,m2" && strings.Join(names, ",") != "m2,m1" {
		t.Errorf("members %v, want m1 and m2", names)
	}

	m2.stop(t)
	m1.stop(t)
}

// Bad flags and inputs are refused before anything is served, each with
// its reason.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()

	notEmpty := filepath.Join(dir, "not-empty")
	if err := os.MkdirAll(notEmpty, 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(notEmpty, "stray"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	data := filepath.Join(dir, "data")

	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help", []string{"--help"}, 0, "Usage: etcd --data-dir DIR"},
		{"no data dir", nil, 2, "etcd: --data-dir DIR is required"},
		{"argument", []string{"--data-dir", data, "member"}, 2, `unexpected argument "member"`},
		{"unknown flag", []string{"--data-dir", data, "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"half a CA", []string{"--data-dir", data, "--ca-cert", "ca.crt"}, 2, "--ca-cert and --ca-key go together"},
		{"bad address", []string{"--data-dir", data, "--addresses", "10.0.0"}, 2, `--addresses: "10.0.0" is not an IP address`},
		{"unknown etcd flag", []string{"--data-dir", data, "--arg", "frobnicate=1"}, 2, `"frobnicate": not an etcd flag`},
		{"owned etcd flag", []string{"--data-dir", data, "--arg", "initial-cluster=x"}, 2, "this applet's own flags set it"},
		{"not KEY=VALUE", []string{"--data-dir", data, "--arg", "log-level"}, 2, `"log-level" is not KEY=VALUE`},
		{"join without CA", []string{"--data-dir", data, "--join", "https://127.0.0.1:2379"}, 1, "joining a cluster needs its etcd CA"},
		{"missing CA file", []string{"--data-dir", data, "--ca-cert", filepath.Join(dir, "ca.crt"), "--ca-key", filepath.Join(dir, "ca.key")}, 1, "read CA certificate: open " + filepath.Join(dir, "ca.crt")},
		{"plain http", []string{"--data-dir", filepath.Join(dir, "http"), "--listen-client-urls", "http://127.0.0.1:2379"}, 1, "scheme must be https"},
		{"stray files", []string{"--data-dir", notEmpty, "--listen-client-urls", "https://127.0.0.1:1", "--listen-peer-urls", "https://127.0.0.1:2"}, 1, "etcd data dir is not empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer

			code := etcdapplet.Main(context.Background(), tt.args, applet.Env{Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}

	if etcd.IsInitialized(data) {
		t.Error("a refused start left a member behind")
	}
}
