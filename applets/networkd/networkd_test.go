package networkd_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talosbox/talosbox/applets/networkd"
	"github.com/talosbox/talosbox/internal/applet"
)

// appletEnv makes the test binary act as networkd, so the applet can run
// as its own process inside a namespace through `ip netns exec`.
const appletEnv = "NETWORKD_TEST_APPLET"

func TestMain(m *testing.M) {
	if os.Getenv(appletEnv) == "1" {
		os.Exit(networkd.Main(context.Background(), os.Args[1:], applet.OSEnv()))
	}

	os.Exit(m.Run())
}

// newNS makes a namespace whose eth0 is one end of a veth pair; the other
// end, peer0, is up in the same namespace.
func newNS(t testing.TB) string {
	t.Helper()

	name := addNS(t)
	ipOut(t, name, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0")
	ipOut(t, name, "link", "set", "peer0", "up")

	return name
}

// addNS makes an empty namespace (lo up), deleted at cleanup.
func addNS(t testing.TB) string {
	t.Helper()

	if os.Geteuid() != 0 {
		t.Fatal("needs root for network namespaces; CI runs as root")
	}

	b := make([]byte, 3)
	rand.Read(b) //nolint:errcheck // never fails

	name := "tbnd-" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}

	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() }) //nolint:errcheck // best effort

	ipOut(t, name, "link", "set", "lo", "up")

	return name
}

func writeConfig(t testing.TB, dir, network string) string {
	t.Helper()

	path := filepath.Join(dir, "machine.yaml")
	if err := os.WriteFile(path, []byte("version: v1alpha1\nmachine:\n  type: worker\n  network:\n"+network), 0o600); err != nil {
		t.Fatal(err)
	}

	return path
}

const goodNetwork = `    hostname: nd-1
    nameservers: [10.9.0.53]
    interfaces:
      - interface: eth0
        addresses: [10.9.0.2/24]
        mtu: 1450
        routes:
          - network: 10.20.0.0/16
            gateway: 10.9.0.1
            metric: 100
`

// networkdCmd runs networkd inside ns as a separate process.
func networkdCmd(ns string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), appletEnv+"=1")

	return cmd
}

func ipOut(t testing.TB, ns string, args ...string) string {
	t.Helper()

	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}

	return string(out)
}

func TestOnceAppliesAndExits(t *testing.T) {
	ns, dir := newNS(t), t.TempDir()
	cfg := writeConfig(t, dir, goodNetwork)

	var stdout, stderr bytes.Buffer

	cmd := networkdCmd(ns, "--config", cfg, "--once", "--etc-dir", filepath.Join(dir, "etc"), "--hostname-file", filepath.Join(dir, "hostname"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	if err := cmd.Run(); err != nil {
		t.Fatalf("networkd --once: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}

	if !strings.Contains(stdout.String(), "address=true connectivity=false hostname=true etcfiles=true issues=0") {
		t.Errorf("status line: %s", stdout.String())
	}

	if out := ipOut(t, ns, "addr", "show", "dev", "eth0"); !strings.Contains(out, "10.9.0.2/24") || !strings.Contains(out, "mtu 1450") {
		t.Errorf("eth0 after --once:\n%s", out)
	}

	if out := ipOut(t, ns, "route", "show", "10.20.0.0/16"); !strings.Contains(out, "via 10.9.0.1 dev eth0 proto 116 metric 100") {
		t.Errorf("route after --once: %q", out)
	}

	for file, want := range map[string]string{"hostname": "nd-1\n", "etc/resolv.conf": "nameserver 10.9.0.53\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", file, b, err, want)
		}
	}
}

func TestOnceReportsFailures(t *testing.T) {
	ns, dir := newNS(t), t.TempDir()
	cfg := writeConfig(t, dir, `    interfaces:
      - interface: eth0
        addresses: [10.9.0.2/24]
        mtu: 70000
      - interface: eth9
        addresses: [10.9.9.2/24]
`)

	var stdout, stderr bytes.Buffer

	cmd := networkdCmd(ns, "--config", cfg, "--once", "--timeout", "10s")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d (%v), want 1\nstderr: %s", code, err, stderr.String())
	}

	for _, want := range []string{"link/eth0: set MTU 70000 on link eth0", "link/eth9: link not found: waiting for link eth9 to appear (pending)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}

	// What could be applied was.
	if out := ipOut(t, ns, "addr", "show", "dev", "eth0"); !strings.Contains(out, "10.9.0.2/24") {
		t.Errorf("eth0:\n%s", out)
	}
}

// Without --once networkd keeps reconciling until SIGTERM, then exits 0.
func TestServeUntilSIGTERM(t *testing.T) {
	ns, dir := newNS(t), t.TempDir()
	cfg := writeConfig(t, dir, goodNetwork)

	cmd := networkdCmd(ns, "--config", cfg)

	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "address=true") {
	}

	ipOut(t, ns, "addr", "del", "10.9.0.2/24", "dev", "eth0")

	deadline := time.Now().Add(time.Second)
	for !strings.Contains(ipOut(t, ns, "addr", "show", "dev", "eth0"), "10.9.0.2/24") {
		if time.Now().After(deadline) {
			t.Fatal("the deleted address did not come back within 1s")
		}

		time.Sleep(10 * time.Millisecond) // polling the kernel from outside the process
	}

	cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // checked by Wait

	if err := cmd.Wait(); err != nil {
		t.Fatalf("networkd after SIGTERM: %v", err)
	}
}

func TestHelpAndVersion(t *testing.T) {
	var out bytes.Buffer

	env := applet.Env{Stdout: &out, Stderr: &out, Getenv: os.Getenv}

	if code := networkd.Main(context.Background(), []string{"--help"}, env); code != 0 || !strings.Contains(out.String(), "Usage: networkd --config") {
		t.Errorf("--help: %d %s", code, out.String())
	}

	out.Reset()

	if code := networkd.Main(context.Background(), []string{"--version"}, env); code != 0 || !strings.HasPrefix(out.String(), "networkd ") {
		t.Errorf("--version: %d %s", code, out.String())
	}

	out.Reset()

	if code := networkd.Main(context.Background(), nil, env); code != 2 {
		t.Errorf("no --config: exit %d", code)
	}
}

// BenchmarkIdleRSS reports the resident memory of networkd alone (this
// test binary acting as the applet), idle after applying a config. Run it
// without -race for a meaningful number:
//
//	go test -run '^$' -bench IdleRSS -benchtime 1x ./applets/networkd/
func BenchmarkIdleRSS(b *testing.B) {
	for range b.N {
		ns, dir := newNS(b), b.TempDir()
		cmd := networkdCmd(ns, "--config", writeConfig(b, dir, goodNetwork), "--etc-dir", filepath.Join(dir, "etc"))

		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}

		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}

		sc := bufio.NewScanner(out)
		for sc.Scan() && !strings.Contains(sc.Text(), "address=true") {
		}

		time.Sleep(2 * time.Second) // let it go idle: this is the measurement, not synchronisation

		status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "status"))
		if err != nil {
			b.Fatal(err)
		}

		for line := range strings.Lines(string(status)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					b.Fatal(err)
				}

				b.ReportMetric(kb/1024, "idle-RSS-MiB")
			}
		}

		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
		cmd.Wait()                          //nolint:errcheck
	}
}
