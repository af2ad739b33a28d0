// Package containerdtest runs real containerd daemons for tests: the test
// binary doubles as containerd (with every plugin a stock containerd has,
// as the multicall binary's applet) and as its runc shim, so no installed
// containerd is needed, only root and runc on PATH.
//
// A test package calls Main first thing (in TestMain, or in an init when
// it does not own TestMain), then Start in its tests. FakeCRI stands in
// for the CRI where a test needs running pods, which need CNI and real
// images here.
package containerdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	// The daemon's plugins.
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
	"github.com/containerd/containerd/v2/cmd/containerd/command"

	"github.com/containerd/containerd/v2/client"

	"github.com/talosbox/talosbox/applets/shim"
	"github.com/talosbox/talosbox/internal/applet"
)

// runEnv makes the test binary run containerd instead of tests.
const runEnv = "CONTAINERDTEST_RUN_CONTAINERD"

// Main runs containerd or the shim and exits when the process was started
// as one of them, and returns otherwise.
func Main() {
	// The shim is started by name from PATH, and starts itself again with
	// only the applet environment saying what it is.
	if filepath.Base(os.Args[0]) == shim.Name || os.Getenv(applet.AppletEnv) == shim.Name {
		os.Exit(shim.Applet.Main(context.Background(), os.Args[1:], applet.OSEnv()))
	}

	if os.Getenv(runEnv) == "1" {
		if err := command.App().Run(context.Background(), append([]string{"containerd"}, os.Args[1:]...)); err != nil {
			fmt.Fprintf(os.Stderr, "containerd: %v\n", err)
			os.Exit(1)
		}

		os.Exit(0)
	}
}

// Plugins the test daemons leave out: those that reach outside their
// directories (NRI's socket in /var/run/nri, /opt/containerd) or only log
// failures here (erofs, blockfile, tracing).
var disabled = []string{
	"io.containerd.differ.v1.erofs",
	"io.containerd.mount-handler.v1.erofs",
	"io.containerd.snapshotter.v1.blockfile",
	"io.containerd.snapshotter.v1.erofs",
	"io.containerd.internal.v1.tracing",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.ttrpc.v1.otelttrpc",
	"io.containerd.nri.v1.nri",
	"io.containerd.internal.v1.opt",
}

// criPlugins are left out too unless the test asks for the CRI.
var criPlugins = []string{
	"io.containerd.grpc.v1.cri",
	"io.containerd.cri.v1.runtime",
	"io.containerd.cri.v1.images",
}

// Options place a test daemon.
type Options struct {
	// Socket is its gRPC address; empty puts it in its directory. A unix
	// socket path, with its ".ttrpc" twin, must fit 108 bytes.
	Socket string
	// CRI loads the CRI plugins (without CNI: the CRI says so in its log
	// and serves all the same).
	CRI bool
	// Config is more TOML for the daemon's config, after the rest: plugin
	// sections the test needs.
	Config string
	// Env is added to the daemon's environment (NAME=value).
	Env []string
}

// Start runs a containerd in a temporary directory and returns its socket
// once it serves. It is stopped, and its log shown if the test failed,
// when the test ends. Without root the test is skipped.
func Start(t testing.TB, opts Options) string {
	t.Helper()

	if os.Geteuid() != 0 {
		t.Skip("containerd needs root")
	}

	// Short, for the socket path.
	dir, err := os.MkdirTemp("", "ctrd")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { os.RemoveAll(dir) })

	sock := opts.Socket
	if sock == "" {
		sock = filepath.Join(dir, "c.sock")
	}

	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, append(config(dir, sock, opts.CRI), opts.Config...), 0o600); err != nil {
		t.Fatal(err)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	// containerd finds the shim on PATH; the host's own, if any, may not
	// speak this containerd's protocol.
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.Symlink(self, filepath.Join(bin, shim.Name)); err != nil {
		t.Fatal(err)
	}

	logPath := filepath.Join(dir, "containerd.log")

	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	cmd := exec.Command(self, "--config", cfgPath)
	cmd.Env = append(append(os.Environ(), runEnv+"=1", "PATH="+bin+":"+os.Getenv("PATH")), opts.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	// Closed when the daemon exits, for every waiter.
	exited := make(chan struct{})

	go func() {
		cmd.Wait() //nolint:errcheck // the log says why
		close(exited)
	}()

	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited

		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // best effort
			<-exited
		}

		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("containerd log:\n%s", log)
		}
	})

	waitServing(t, sock, exited, logPath)

	return sock
}

// waitServing returns once the daemon answers its health check. The check
// waits for the connection (WaitForReady), so it returns as soon as the
// daemon serves; the daemon exiting ends the wait early.
func waitServing(t testing.TB, sock string, exited <-chan struct{}, logPath string) {
	t.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()

	c, err := client.New(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if ok, err := c.IsServing(ctx); !ok || err != nil {
		log, _ := os.ReadFile(logPath)
		t.Fatalf("containerd did not serve: %v\n%s", err, log)
	}
}

// config is a containerd config for a daemon in dir: version 3, as
// internal/cri renders the node's, so the tests read the same layout
// (containerd 2.4 migrates it to version 4 at start and says so).
func config(dir, sock string, cri bool) []byte {
	off := disabled
	if !cri {
		off = append(off[:len(off):len(off)], criPlugins...)
	}

	quoted := make([]string, len(off))
	for i, p := range off {
		quoted[i] = fmt.Sprintf("%q", p)
	}

	var b strings.Builder

	fmt.Fprintf(&b, "version = 3\nroot = %q\nstate = %q\ndisabled_plugins = [%s]\n\n[grpc]\naddress = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "state"), strings.Join(quoted, ", "), sock)

	if cri {
		// Not the host's CNI.
		fmt.Fprintf(&b, "\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nbin_dirs = [%q]\nconf_dir = %q\n", filepath.Join(dir, "cni"), filepath.Join(dir, "cni"))
	}

	return []byte(b.String())
}

// Connect is a client of a test daemon, closed with the test.
func Connect(t testing.TB, sock string) *client.Client {
	t.Helper()

	c, err := client.New(sock)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { c.Close() })

	return c
}
