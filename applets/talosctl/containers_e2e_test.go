package talosctl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/apid/apidtest"
	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// The test binary is also the containerd (and its shim) these tests
// start; init runs before TestMain hands the binary to testscript.
func init() { containerdtest.Main() }

// ctlNode is a node for the container commands and how to run talosctl
// against it.
type ctlNode struct {
	*apidtest.Node

	base []string
}

// startCtlNode boots a node in a short directory (the containerd sockets
// live under it) and writes the talosconfig to reach it.
func startCtlNode(t *testing.T) *ctlNode {
	t.Helper()

	dir, err := os.MkdirTemp("", "tc")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(dir) })

	if code, _, errOut := runCtl("gen", "config", "e2e", "https://10.5.0.2:6443", "-o", dir); code != 0 {
		t.Fatalf("gen config: %s", errOut)
	}

	cfg := filepath.Join(dir, "n.yaml")
	if code, _, errOut := runCtl("machineconfig", "patch", filepath.Join(dir, "controlplane.yaml"),
		"-p", "machine: {certSANs: [127.0.0.1]}\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: node-1\n", "-o", cfg); code != 0 {
		t.Fatalf("machineconfig patch: %s", errOut)
	}

	nd := apidtest.Start(t, apidtest.Options{Dir: filepath.Join(dir, "n"), ConfigPath: cfg, Name: "node-1"})

	return &ctlNode{Node: nd, base: []string{"--talosconfig", filepath.Join(dir, "talosconfig"), "-e", nd.Addr, "-n", nd.Addr}}
}

// run runs talosctl to its end, wanting exit code wantCode.
func (n *ctlNode) run(t *testing.T, wantCode int, args ...string) (string, string) {
	t.Helper()

	out, errOut := newOutput(), newOutput()
	if code := ctl(context.Background(), out, errOut, append(n.base, args...)...); code != wantCode {
		t.Fatalf("talosctl %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantCode, out, errOut)
	}

	return out.String(), errOut.String()
}

// wantLines checks that each line of out matches the pattern at its index.
func wantLines(t *testing.T, out string, patterns ...string) {
	t.Helper()

	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(patterns) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(patterns), out)
	}

	for i, p := range patterns {
		if !regexp.MustCompile("^" + p + "$").MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %q", i, lines[i], p)
		}
	}
}

// TestContainerCommands runs containers, stats, logs -k and image
// list/pull against a node whose two containerd instances are real
// daemons at the sockets of the node's runtime layout.
func TestContainerCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a node and two containerd daemons")
	}

	nd := startCtlNode(t)
	rt := nd.Machine.Runtime()

	system := containerdtest.Start(t, containerdtest.Options{Socket: rt.SystemSocket})
	containerdtest.Start(t, containerdtest.Options{Socket: rt.CRISocket, CRI: true})

	pid := containerdtest.RunSleeper(t, containerdtest.Connect(t, system), "system", "svc", nil)

	node := regexp.QuoteMeta(nd.Addr)

	t.Run("containers", func(t *testing.T) {
		out, _ := nd.run(t, 0, "containers")
		wantLines(t, out,
			`NODE +NAMESPACE +ID +IMAGE +PID +STATUS`,
			fmt.Sprintf(`%s   system      svc   +%d   RUNNING`, node, pid),
		)

		// No pods: the header alone.
		out, _ = nd.run(t, 0, "c", "-k")
		wantLines(t, out, `NODE +NAMESPACE +ID +IMAGE +PID +STATUS`)
	})

	t.Run("stats", func(t *testing.T) {
		out, _ := nd.run(t, 0, "stats")
		wantLines(t, out,
			`NODE +NAMESPACE +ID +MEMORY\(MB\) +CPU`,
			node+`   system      svc   \d+\.\d\d +[1-9]\d*`,
		)
	})

	t.Run("logs -k", func(t *testing.T) {
		_, errOut := nd.run(t, 1, "logs", "-k", "kube-system/kube-apiserver-node-1:kube-apiserver")
		if !strings.Contains(errOut, `container "kube-system/kube-apiserver-node-1:kube-apiserver" not found`) {
			t.Errorf("stderr: %s", errOut)
		}
	})

	t.Run("image", func(t *testing.T) {
		registry := containerdtest.Registry(t, "test/hello:v1")
		containerdtest.MirrorOnly(t, rt.HostsDir, "example.test", "http://"+registry)

		out, _ := nd.run(t, 0, "image", "pull", "example.test/test/hello:v1")
		wantLines(t, out, node+`: pulled image example.test/test/hello:v1`)

		_, errOut := nd.run(t, 1, "image", "p", "example.test/test/absent:v1")
		if !strings.Contains(errOut, "http://"+registry) || !strings.Contains(errOut, "not found") {
			t.Errorf("a missing image's error must name the mirror:\n%s", errOut)
		}

		out, _ = nd.run(t, 0, "image", "ls")
		created := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`
		wantLines(t, out,
			`NODE +IMAGE +DIGEST +SIZE +CREATED`,
			node+`   example.test/test/hello:v1 +sha256:[0-9a-f]{64}   [\d.]+ k?B +`+created,
			node+`   example.test/test/hello@sha256:[0-9a-f]{64} +sha256:[0-9a-f]{64}   [\d.]+ k?B +`+created,
			node+`   sha256:[0-9a-f]{64} +sha256:[0-9a-f]{64}   [\d.]+ k?B +`+created,
		)

		out, _ = nd.run(t, 0, "image", "list", "--namespace", "system")
		wantLines(t, out, `NODE +IMAGE +DIGEST +SIZE +CREATED`)
	})
}

// TestKubernetesContainerCommands runs containers -k, stats -k and
// logs -k against a node whose CRI reports two pods, one of them with a
// restarted container, and whose log files are CRI log files.
func TestKubernetesContainerCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a node")
	}

	nd := startCtlNode(t)
	rt := nd.Machine.Runtime()

	const api = "kube-system/kube-apiserver-node-1"

	logDir := t.TempDir()
	logFile := filepath.Join(logDir, "1.log")
	lines := []string{
		"2026-01-02T03:04:05.000000001Z stderr F 2026/01/02 03:04:05 Running command:",
		"2026-01-02T03:04:05.000000002Z stderr F Command env: (log-file=, also-stdout=false, redirect-stderr=true)",
		"2026-01-02T03:04:05.000000003Z stdout P partial ",
		"2026-01-02T03:04:05.000000004Z stdout F line",
	}

	if err := os.WriteFile(logFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	containerdtest.FakeCRI(t, rt.CRISocket, []containerdtest.FakePod{
		{
			Namespace: "kube-system", Name: "kube-scheduler-node-1", ID: "sb2", PID: 2638, Ready: true, Image: "registry.k8s.io/pause:3.10",
			Containers: []containerdtest.FakeContainer{{ID: "c3", Name: "kube-scheduler", Image: "registry.k8s.io/kube-scheduler:v1.34.1", PID: 2670, Running: true, Memory: 25e6, CPU: 3e9}},
		},
		{
			Namespace: "kube-system", Name: "kube-apiserver-node-1", ID: "sb1", PID: 2539, Ready: true, Image: "registry.k8s.io/pause:3.10",
			Containers: []containerdtest.FakeContainer{
				{ID: "c1", Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.34.1", Attempt: 0, LogPath: filepath.Join(logDir, "0.log")},
				{ID: "c2", Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.34.1", PID: 2572, Attempt: 1, Running: true, LogPath: logFile, Memory: 312.5e6, CPU: 42e9},
			},
		},
	})

	node := regexp.QuoteMeta(nd.Addr)

	t.Run("containers -k", func(t *testing.T) {
		out, _ := nd.run(t, 0, "containers", "-k")
		wantLines(t, out,
			`NODE +NAMESPACE +ID +IMAGE +PID +STATUS`,
			node+`   k8s\.io      kube-system/kube-apiserver-node-1 +registry\.k8s\.io/pause:3\.10 +2539   SANDBOX_READY`,
			node+`   k8s\.io      └─ kube-system/kube-apiserver-node-1:kube-apiserver +registry\.k8s\.io/kube-apiserver:v1\.34\.1 +2572   CONTAINER_RUNNING`,
			node+`   k8s\.io      └─ kube-system/kube-apiserver-node-1:kube-apiserver +registry\.k8s\.io/kube-apiserver:v1\.34\.1 +0      CONTAINER_EXITED`,
			node+`   k8s\.io      kube-system/kube-scheduler-node-1 +registry\.k8s\.io/pause:3\.10 +2638   SANDBOX_READY`,
			node+`   k8s\.io      └─ kube-system/kube-scheduler-node-1:kube-scheduler +registry\.k8s\.io/kube-scheduler:v1\.34\.1 +2670   CONTAINER_RUNNING`,
		)
	})

	t.Run("stats -k", func(t *testing.T) {
		out, _ := nd.run(t, 0, "stats", "-k")
		wantLines(t, out,
			`NODE +NAMESPACE +ID +MEMORY\(MB\) +CPU`,
			node+`   k8s\.io      kube-system/kube-apiserver-node-1 +0\.00 +0`,
			node+`   k8s\.io      └─ kube-system/kube-apiserver-node-1:kube-apiserver +312\.50 +42000000000`,
			node+`   k8s\.io      kube-system/kube-scheduler-node-1 +0\.00 +0`,
			node+`   k8s\.io      └─ kube-system/kube-scheduler-node-1:kube-scheduler +25\.00 +3000000000`,
		)
	})

	t.Run("logs -k", func(t *testing.T) {
		// The newest attempt's log, each line as the CRI wrote it after
		// the node's name.
		out, _ := nd.run(t, 0, "logs", "-k", api+":kube-apiserver")
		wantLines(t, out,
			node+`: `+regexp.QuoteMeta(lines[0]),
			node+`: `+regexp.QuoteMeta(lines[1]),
			node+`: `+regexp.QuoteMeta(lines[2]),
			node+`: `+regexp.QuoteMeta(lines[3]),
		)

		out, _ = nd.run(t, 0, "logs", "-k", api+":kube-apiserver", "--tail", "1")
		wantLines(t, out, node+`: `+regexp.QuoteMeta(lines[3]))

		_, errOut := nd.run(t, 1, "logs", "-k", api+":etcd")
		if !strings.Contains(errOut, `container "kube-system/kube-apiserver-node-1:etcd" not found`) {
			t.Errorf("stderr: %s", errOut)
		}

		_, errOut = nd.run(t, 1, "logs", "-k", api)
		if !strings.Contains(errOut, "is a pod: logs are a container's") {
			t.Errorf("stderr: %s", errOut)
		}
	})

	t.Run("logs -k -f", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		out, errOut := newOutput(), newOutput()
		code := make(chan int, 1)

		go func() {
			code <- ctl(ctx, out, errOut, append(nd.base, "logs", "-k", api+":kube-apiserver", "-f", "--tail", "1")...)
		}()

		// Once the tail is out, the file is open and followed: what is
		// appended next must come.
		out.waitFor(t, 30*time.Second, nd.Addr+": "+lines[3]+"\n")

		next := "2026-01-02T03:04:06.000000000Z stdout F appended"

		f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}

		if _, err := f.WriteString(next + "\n"); err != nil {
			t.Fatal(err)
		}

		f.Close()

		out.waitFor(t, 30*time.Second, nd.Addr+": "+next+"\n")
		cancel()

		if c := <-code; c != 0 || errOut.String() != "" {
			t.Fatalf("logs -f cancelled: exit %d, stderr %q", c, errOut)
		}

		if strings.Contains(out.String(), "Running command") {
			t.Errorf("--tail 1 showed older lines:\n%s", out)
		}
	})
}
