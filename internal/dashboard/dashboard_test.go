package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/apid/apidtest"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/dashboard"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/version"
)

// The dashboard is tested against real nodes: container-mode nodes with
// their apid, in this process, the second reached through the first as
// talosctl reaches a cluster's nodes through one endpoint. The test file
// is outside talosctl's import graph, so the dashboard still links no
// node-side package.

// netRate and netNA are the network graph's title with a rate, and
// without one.
var (
	netRate = regexp.MustCompile(`NET RX +[0-9.]+ [kMGT]?B/s`)
	netNA   = regexp.MustCompile(`NET RX +n/a`)
)

// waitTimeout bounds each wait for the screen: a poll every 200ms and
// nodes on loopback answer well within it, unless something is wrong.
const waitTimeout = 30 * time.Second

// cluster is two configured nodes of one cluster.
type cluster struct {
	secrets *pki.Bundle
	nodes   []*apidtest.Node
}

func startCluster(t *testing.T) *cluster {
	t.Helper()

	if testing.Short() {
		t.Skip("boots two nodes")
	}

	b, err := pki.NewBundle(pki.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}

	out, err := generate.Generate(generate.Options{ClusterName: "dash", Endpoint: "https://127.0.0.1:6443", Secrets: b})
	if err != nil {
		t.Fatal(err)
	}

	base, err := out.ControlPlane.Encode()
	if err != nil {
		t.Fatal(err)
	}

	c := &cluster{secrets: b}
	root := t.TempDir()

	for _, n := range []struct{ name, ip string }{{"node-a", "127.0.0.1"}, {"node-b", "127.0.0.2"}} {
		// The certificate names the address the node is dialled on.
		patch, err := configpatch.Parse(fmt.Appendf(nil, "machine: {certSANs: [%s]}\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: %s\n", n.ip, n.name))
		if err != nil {
			t.Fatal(err)
		}

		data, err := configpatch.Apply(base, patch...)
		if err != nil {
			t.Fatal(err)
		}

		// The node's directory is named after it, so its log (which
		// names its state directory) tells the nodes apart.
		dir := filepath.Join(root, n.name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}

		cfg := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfg, data, 0o600); err != nil {
			t.Fatal(err)
		}

		nd := apidtest.Start(t, apidtest.Options{Dir: dir, ConfigPath: cfg, IP: n.ip, Name: n.name})
		nd.Console.Wait(t, time.Minute, "[talos] services: ")
		c.nodes = append(c.nodes, nd)
	}

	return c
}

// client connects to the first node with a certificate of roles.
func (c *cluster) client(t *testing.T, roles ...string) *client.Client {
	t.Helper()

	crt, err := pki.NewClientCertificate(&c.secrets.Certs.OS, pki.ClientOptions{Roles: roles})
	if err != nil {
		t.Fatal(err)
	}

	cl, err := client.New(client.Options{Endpoints: []string{c.nodes[0].Addr}, CA: c.secrets.Certs.OS.Crt, Crt: crt.Crt, Key: crt.Key})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { cl.Close() })

	return cl
}

// screen is a simulated terminal the test reads after each frame.
type screen struct {
	tcell.SimulationScreen

	mu     sync.Mutex
	lines  []string
	frames int
	more   chan struct{}
}

func newScreen() *screen {
	return &screen{SimulationScreen: tcell.NewSimulationScreen("UTF-8"), more: make(chan struct{})}
}

// afterDraw is the dashboard's AfterDraw: it runs on the UI goroutine with
// the frame complete in the screen's buffer.
func (s *screen) afterDraw(sc tcell.Screen) {
	w, h := sc.Size()
	lines := make([]string, h)

	for y := range h {
		var b strings.Builder

		for x := range w {
			r, _, _, _ := sc.GetContent(x, y)
			b.WriteRune(r)
		}

		lines[y] = strings.TrimRight(b.String(), " ")
	}

	s.mu.Lock()
	s.lines = lines
	s.frames++
	close(s.more)
	s.more = make(chan struct{})
	s.mu.Unlock()
}

// waitFor returns the first frame for which ok holds, failing at the
// deadline with the last frame seen.
func (s *screen) waitFor(t *testing.T, what string, ok func(lines []string) bool) []string {
	t.Helper()

	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()

	for {
		s.mu.Lock()
		lines, frames, more := s.lines, s.frames, s.more
		s.mu.Unlock()

		if frames > 0 && ok(lines) {
			return lines
		}

		select {
		case <-more:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; screen:\n%s", what, strings.Join(lines, "\n"))
		}
	}
}

// waitText waits for a frame holding every want.
func (s *screen) waitText(t *testing.T, want ...string) []string {
	t.Helper()

	return s.waitFor(t, fmt.Sprintf("%q", want), func(lines []string) bool {
		text := strings.Join(lines, "\n")
		for _, w := range want {
			if !strings.Contains(text, w) {
				return false
			}
		}

		return true
	})
}

// running is a dashboard on a simulated 200x60 terminal.
type running struct {
	*screen

	cancel context.CancelFunc
	done   chan error
}

func runDashboard(t *testing.T, c *client.Client, nodes []string) *running {
	t.Helper()

	ctx, cancel := context.WithCancel(context.Background())
	r := &running{screen: newScreen(), cancel: cancel, done: make(chan error, 1)}

	reach := func(ctx context.Context, _ string) (context.Context, *client.Client) { return ctx, c }

	go func() {
		r.done <- dashboard.Run(ctx, r.screen, dashboard.Options{
			Sources: dashboard.APISources(nodes, reach), Interval: 200 * time.Millisecond, AfterDraw: r.afterDraw,
		})
	}()

	t.Cleanup(func() {
		cancel()
		<-r.done
	})

	// tview initializes the screen to 80x25: make it larger once it has,
	// and tell the app, as a terminal would.
	r.waitFor(t, "the first frame", func([]string) bool { return true })
	r.SetSize(200, 60)

	if err := r.PostEvent(tcell.NewEventResize(200, 60)); err != nil {
		t.Fatal(err)
	}

	r.waitFor(t, "the resized frame", func(lines []string) bool { return len(lines) == 60 })

	return r
}

// stopped waits for Run to return and is its error.
func (r *running) stopped(t *testing.T) error {
	t.Helper()

	select {
	case err := <-r.done:
		r.done <- err // for the cleanup

		return err
	case <-time.After(waitTimeout):
		t.Fatal("the dashboard did not stop")

		return nil
	}
}

func TestDashboard(t *testing.T) {
	c := startCluster(t)
	a, b := c.nodes[0], c.nodes[1]
	d := runDashboard(t, c.client(t, "os:admin"), dashboard.SortNodes([]string{b.Addr, a.Addr}))

	header := func(lines []string) string { return lines[0] }

	// F1: the summary of the first node (by address), with its log.
	lines := d.waitText(t, "node-a "+"talosbox ("+version.Tag+"): uptime ", "STAGE", "√ Running", "√ True", "controlplane",
		"PLATFORM", "container", "[talos] services: machined=Running", "node-a/node/state/")
	if h := header(lines); !strings.Contains(h, ", PROCS ") || !strings.Contains(h, "x CPU") {
		t.Errorf("header lacks processes or CPUs: %q", h)
	}

	footer := lines[len(lines)-1]
	for _, want := range []string{"[" + a.Addr + " | " + b.Addr + "]", "[Summary]", "[F2: Monitor]", "[F3: Network Config]"} {
		if !strings.Contains(footer, want) {
			t.Errorf("footer lacks %q: %q", want, footer)
		}
	}

	// F2: graphs, with network rates (an admin may read the counters),
	// and the processes: this test's own among the busiest.
	d.InjectKey(tcell.KeyF2, 0, tcell.ModNone)

	self := strconv.Itoa(os.Getpid())

	d.waitFor(t, "the monitor with this process", func(lines []string) bool {
		text := strings.Join(lines, "\n")
		if !strings.Contains(text, "CPU USER/SYSTEM") || !strings.Contains(text, "MEM USED") || !strings.Contains(text, "[Monitor]") {
			return false
		}

		if !netRate.MatchString(text) {
			return false
		}

		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 1 && f[0] == self && strings.Contains(l, "dashboard.test") {
				return true
			}
		}

		return false
	})

	// Right: the second node, reached through the first.
	d.InjectKey(tcell.KeyRight, 0, tcell.ModNone)
	d.waitFor(t, "node-b's header", func(lines []string) bool {
		h := header(lines)

		return strings.Contains(h, "node-b talosbox") && !strings.Contains(h, "node-a") && strings.Contains(h, ", PROCS ")
	})

	// Its log replaces the first node's.
	d.InjectKey(tcell.KeyF1, 0, tcell.ModNone)
	d.waitFor(t, "node-b's log", func(lines []string) bool {
		text := strings.Join(lines, "\n")

		return strings.Contains(text, "node-b/node/state/") && !strings.Contains(text, "node-a/node/state/")
	})

	// The last node stays selected past the end; h goes back.
	d.InjectKey(tcell.KeyRight, 0, tcell.ModNone)
	d.InjectKey(tcell.KeyRune, 'h', tcell.ModNone)
	d.waitFor(t, "node-a's header", func(lines []string) bool { return strings.Contains(header(lines), "node-a talosbox") })

	// F3: the network, here the interfaces the counters name.
	d.InjectKey(tcell.KeyF3, 0, tcell.ModNone)
	d.waitFor(t, "the network screen", func(lines []string) bool {
		text := strings.Join(lines, "\n")
		if !strings.Contains(text, "HOSTNAME  node-a") || !strings.Contains(text, "[Network Config]") {
			return false
		}

		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 6 && f[0] == "lo" && strings.HasSuffix(f[6], "/s") {
				return true
			}
		}

		return false
	})

	d.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)

	if err := d.stopped(t); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
}

// A reader sees everything the dashboard shows, network rates included
// (NetworkDeviceStats is a reader's call). Cancelling the context ends it.
func TestDashboardReader(t *testing.T) {
	c := startCluster(t)
	d := runDashboard(t, c.client(t, "os:reader"), []string{c.nodes[1].Addr})

	d.InjectKey(tcell.KeyF2, 0, tcell.ModNone)
	d.waitFor(t, "the monitor with network rates", func(lines []string) bool {
		text := strings.Join(lines, "\n")
		return strings.Contains(lines[0], "node-b talosbox") && strings.Contains(text, "COMMAND") &&
			strings.Contains(text, "CPU USER/SYSTEM") && netRate.MatchString(text) && !netNA.MatchString(text)
	})

	d.cancel()

	if err := d.stopped(t); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
}
