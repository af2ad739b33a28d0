package talosctl_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/applets/talosctl"
	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/apid/apidtest"
	"github.com/talosbox/talosbox/internal/applet"
)

// This file is the only one that starts real nodes: test files are not
// part of talosctl's import graph (TestImportGraph lists it without
// -test), so talosctl itself still never links apid or machine.
//
// The end-to-end tests of every command run the real binary against
// nodes in their own namespaces (../../e2e_*_test.go). These run
// talosctl in this process instead, so that its concurrent paths (fan-out,
// streams cut mid-way, watches, waiting for reboots) run under the race
// detector, which the binary is not built with.

// output is a writer tests can wait on: each write wakes waiters.
type output struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{}
}

func newOutput() *output { return &output{more: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()

	n, err := o.b.Write(p)
	close(o.more)
	o.more = make(chan struct{})

	return n, err
}

// next is closed at the next write.
func (o *output) next() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()

	return o.more
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()

	return o.b.String()
}

// waitFor returns once every s appears in the output, failing after timeout.
func (o *output) waitFor(t *testing.T, timeout time.Duration, s ...string) {
	t.Helper()

	deadline := time.After(timeout)

	for {
		o.mu.Lock()
		text, more := o.b.String(), o.more
		o.mu.Unlock()

		missing := false

		for _, want := range s {
			if !strings.Contains(text, want) {
				missing = true
			}
		}

		if !missing {
			return
		}

		select {
		case <-more:
		case <-deadline:
			t.Fatalf("timed out waiting for %q in:\n%s", s, text)
		}
	}
}

// realNode is a container-mode node with apid on a loopback address.
type realNode struct {
	name, addr string
}

// startRealNode boots a node of the cluster in dir (made by gen config)
// on ip, named name, with a certificate naming ip.
func startRealNode(t *testing.T, dir, ip, name string) *realNode {
	t.Helper()

	cfg := filepath.Join(dir, name+".yaml")
	if code, _, errOut := runCtl("machineconfig", "patch", filepath.Join(dir, "controlplane.yaml"),
		"-p", fmt.Sprintf("machine: {certSANs: [%s]}\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: %s\n", ip, name), "-o", cfg); code != 0 {
		t.Fatalf("machineconfig patch: %s", errOut)
	}

	nd := apidtest.Start(t, apidtest.Options{Dir: filepath.Join(dir, name), ConfigPath: cfg, IP: ip, Name: name})
	nd.Console.Wait(t, time.Minute, "[talos] services: ")

	return &realNode{name: name, addr: nd.Addr}
}

// ctl runs talosctl in this process until it ends or ctx is done.
func ctl(ctx context.Context, stdout, stderr *output, args ...string) int {
	return talosctl.Main(ctx, args, applet.Env{
		Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr, Getenv: func(string) string { return "" },
	})
}

func TestInProcessNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("boots two nodes")
	}

	dir := t.TempDir()
	if code, _, errOut := runCtl("gen", "config", "e2e", "https://10.5.0.2:6443", "-o", dir); code != 0 {
		t.Fatalf("gen config: %s", errOut)
	}

	n1 := startRealNode(t, dir, "127.0.0.1", "node-1")
	n2 := startRealNode(t, dir, "127.0.0.2", "node-2")
	base := []string{"--talosconfig", filepath.Join(dir, "talosconfig"), "-e", n1.addr, "-n", n1.addr + "," + n2.addr}

	// run runs a command to its end on both nodes.
	run := func(t *testing.T, args ...string) (string, string) {
		t.Helper()

		out, errOut := newOutput(), newOutput()
		if code := ctl(context.Background(), out, errOut, append(base, args...)...); code != 0 {
			t.Fatalf("talosctl %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}

		return out.String(), errOut.String()
	}

	// stream runs a command that does not end by itself, until every want
	// string is out, then cancels it as Ctrl-C would.
	stream := func(t *testing.T, args []string, want ...string) string {
		t.Helper()

		ctx, cancel := context.WithCancel(context.Background())
		out, errOut := newOutput(), newOutput()
		code := make(chan int, 1)

		go func() { code <- ctl(ctx, out, errOut, append(base, args...)...) }()

		out.waitFor(t, 30*time.Second, want...)
		cancel()

		if c := <-code; c != 0 || errOut.String() != "" {
			t.Fatalf("talosctl %v cancelled: exit %d, stderr %q", args, c, errOut)
		}

		return out.String()
	}

	t.Run("fan-out", func(t *testing.T) {
		out, _ := run(t, "version")
		for _, n := range []*realNode{n1, n2} {
			if !strings.Contains(out, "Server:\n\tNODE:        "+n.addr+"\n") {
				t.Errorf("version lacks %s:\n%s", n.addr, out)
			}
		}

		out, _ = run(t, "get", "services", "-o", "json")
		if strings.Count(out, `"node": "`+n1.addr+`"`) != 2 || strings.Count(out, `"node": "`+n2.addr+`"`) != 2 {
			t.Errorf("get services -o json:\n%s", out)
		}

		out, _ = run(t, "services")
		if strings.Count(out, " machined ") != 2 {
			t.Errorf("services:\n%s", out)
		}

		out, _ = run(t, "logs", "machined", "--tail", "3")
		if strings.Count(out, n1.addr+": ") != 3 || strings.Count(out, n2.addr+": ") != 3 {
			t.Errorf("logs:\n%s", out)
		}

		out, _ = run(t, "patch", "mc", "--dry-run", "-p", `[{"op":"add","path":"/machine/sysctls","value":{"vm.swappiness":"1"}}]`)
		for _, n := range []*realNode{n1, n2} {
			if !strings.Contains(out, n.addr+": Config diff:\n"+n.addr+": \n"+n.addr+": + machine.sysctls.vm.swappiness: \"1\"\n") {
				t.Errorf("patch --dry-run lacks %s's change:\n%s", n.addr, out)
			}
		}

		if out, _ = run(t, "health"); !strings.HasSuffix(out, "waiting for all services to be up: OK\nskipping Kubernetes checks: no control plane node known\n") {
			t.Errorf("health:\n%s", out)
		}
	})

	// The machine config as os:reader sees it (talosctl get mc -o yaml):
	// structure and settings, every secret masked; os:admin sees it all.
	t.Run("reader sees the config redacted", func(t *testing.T) {
		on := func(t *testing.T, talosconfig string, args ...string) string {
			t.Helper()

			out, errOut := newOutput(), newOutput()
			if code := ctl(context.Background(), out, errOut, append([]string{"--talosconfig", talosconfig, "-e", n1.addr, "-n", n1.addr}, args...)...); code != 0 {
				t.Fatalf("talosctl %v: exit %d: %s", args, code, errOut)
			}

			return out.String()
		}

		adminCfg, readerCfg := filepath.Join(dir, "talosconfig"), filepath.Join(t.TempDir(), "talosconfig")
		on(t, adminCfg, "config", "new", readerCfg, "--roles", "os:reader")

		reader := on(t, readerCfg, "get", "mc", "-o", "yaml")
		admin := on(t, adminCfg, "get", "machineconfig", "-o", "yaml")

		for _, want := range []string{"hostname: node-1", `token: "******"`, `secretboxEncryptionSecret: "******"`} {
			if !strings.Contains(reader, want) {
				t.Errorf("the reader's config lacks %q:\n%s", want, reader)
			}
		}

		text, err := os.ReadFile(filepath.Join(dir, "controlplane.yaml"))
		if err != nil {
			t.Fatal(err)
		}

		cfg, err := configs.Decode(text)
		if err != nil {
			t.Fatal(err)
		}

		for name, secret := range map[string]string{
			"trustd token": cfg.Machine.Token, "bootstrap token": cfg.Cluster.Token, "cluster secret": cfg.Cluster.Secret,
			"secretbox key": cfg.Cluster.SecretboxEncryptionSecret, "OS CA key": base64.StdEncoding.EncodeToString(cfg.Machine.CA.Key),
			"etcd CA key": base64.StdEncoding.EncodeToString(cfg.Cluster.Etcd.CA.Key),
		} {
			if secret == "" || strings.Contains(reader, secret) {
				t.Errorf("the reader sees the %s (or the config has none)", name)
			}

			if !strings.Contains(admin, secret) {
				t.Errorf("the admin does not see the %s", name)
			}
		}
	})

	t.Run("streams", func(t *testing.T) {
		stream(t, []string{"get", "machinestatus", "-w"}, n1.addr+"   +", n2.addr+"   +")
		stream(t, []string{"logs", "machined", "-f", "--tail", "2"}, n1.addr+": ", n2.addr+": ")
		stream(t, []string{"events", "--tail", "3"}, n1.addr+"  ", n2.addr+"  ")
	})

	t.Run("reboot --wait", func(t *testing.T) {
		_, errOut := run(t, "reboot", "--wait", "--timeout", "1m")
		for _, n := range []*realNode{n1, n2} {
			if !strings.Contains(errOut, n.addr+": back: running\n") {
				t.Errorf("reboot --wait: %s not back:\n%s", n.addr, errOut)
			}
		}
	})
}
