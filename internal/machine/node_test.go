package machine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

var (
	bundleOnce sync.Once
	bundle     *pki.Bundle
)

// workerConfig is a generated worker config, patched.
// hostname is a patch giving the node a static hostname: its
// HostnameConfig document, as generated configs have one (Talos 1.12 on).
func hostname(name string) string {
	return "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: " + name + "\n"
}

func workerConfig(t *testing.T, patches ...string) []byte {
	t.Helper()

	bundleOnce.Do(func() {
		var err error
		if bundle, err = pki.NewBundle(pki.BundleOptions{}); err != nil {
			panic(err)
		}
	})

	out, err := generate.Generate(generate.Options{ClusterName: "test", Endpoint: "https://10.5.0.2:6443", Secrets: bundle})
	if err != nil {
		t.Fatal(err)
	}

	data, err := out.Worker.Encode()
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range patches {
		ps, err := configpatch.Parse([]byte(p))
		if err != nil {
			t.Fatal(err)
		}

		if data, err = configpatch.Apply(data, ps...); err != nil {
			t.Fatal(err)
		}
	}

	return data
}

type testNode struct {
	*machine.Node
	dir     string
	console *syncBuffer
	done    chan error

	evMu   sync.Mutex
	events []machine.Event
}

// eventTypes counts the node events seen so far, by type.
func (tn *testNode) eventTypes() map[string]int {
	tn.evMu.Lock()
	defer tn.evMu.Unlock()

	out := map[string]int{}
	for _, ev := range tn.events {
		out[ev.Type]++
	}

	return out
}

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

// startNode runs a container-mode node in a temp dir with config (nil for
// maintenance mode) until the test ends.
func startNode(t *testing.T, dir string, config []byte) *testNode {
	t.Helper()

	return startNodeWith(t, dir, config, nil)
}

// startNodeWith is startNode with a last say on the options.
func startNodeWith(t *testing.T, dir string, config []byte, edit func(*machine.Options)) *testNode {
	t.Helper()

	if dir == "" {
		dir = t.TempDir()
	}

	var path string
	if config != nil {
		path = filepath.Join(dir, "input.yaml")
		if err := os.WriteFile(path, config, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	p, err := platform.Detect(platform.Options{Flag: platform.Container, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}

	tn := &testNode{dir: dir, console: &syncBuffer{}, done: make(chan error, 1)}

	opts := machine.Options{
		Platform: p, ConfigPath: path, Console: tn.console, NoContainerd: true, StopTimeout: 5 * time.Second,
		OnEvent: func(ev machine.Event) {
			tn.evMu.Lock()
			tn.events = append(tn.events, ev)
			tn.evMu.Unlock()
		},
	}
	if edit != nil {
		edit(&opts)
	}

	tn.Node, err = machine.New(opts)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())

	go func() { tn.done <- tn.Run(ctx) }()

	t.Cleanup(func() {
		cancel()

		select {
		case err := <-tn.done:
			if err != nil && !errors.Is(err, machine.ErrPowerOff) {
				t.Errorf("node run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("node did not stop")
		}

		// A fatal boot error returns with the services up, as PID 1 keeps
		// them for an operator to read the node; the temp dir goes next.
		if sup := tn.Supervisor(); sup != nil {
			if err := sup.StopAll(context.Background()); err != nil {
				t.Errorf("stop the services left by the run: %v", err)
			}
		}

		if t.Failed() {
			t.Logf("console:\n%s", tn.console.String())
		}
	})

	return tn
}

// waitFor watches one resource until cond holds.
func waitFor[T bus.Resource](t *testing.T, n *testNode, p bus.Pointer, what string, cond func(T) bool) T {
	t.Helper()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	w, err := n.Store().Watch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for {
		select {
		case ev := <-w.Events():
			if ev.Type == bus.Errored {
				t.Fatal(ev.Err)
			}

			if r, ok := ev.Resource.(T); ok && ev.Type != bus.Destroyed && cond(r) {
				return r
			}
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s\nconsole:\n%s", what, n.console.String())
		}
	}
}

var (
	stagePtr  = bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStageType, ID: runtime.MachineID}
	statusPtr = bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStatusType, ID: runtime.MachineID}
	configPtr = bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID}
	errorPtr  = bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.ConfigLoadErrorType, ID: "last"}
)

func waitStage(t *testing.T, n *testNode, st runtime.Stage) {
	t.Helper()
	waitFor(t, n, stagePtr, "stage "+string(st), func(r *runtime.MachineStage) bool { return r.TypedSpec().Stage == st })
}

func waitReady(t *testing.T, n *testNode) *runtime.MachineStatus {
	t.Helper()

	return waitFor(t, n, statusPtr, "ready", func(r *runtime.MachineStatus) bool { return r.TypedSpec().Status.Ready })
}

func hostnameOf(t *testing.T, n *testNode) string {
	t.Helper()

	mc, err := bus.GetAs[*config.MachineConfig](context.Background(), n.Store(), configPtr)
	if err != nil {
		t.Fatal(err)
	}

	return mc.TypedSpec().Config.Machine.Network.Hostname
}

func TestMaintenanceModeThenApply(t *testing.T) {
	n := startNode(t, "", nil)
	ctx := context.Background()

	waitStage(t, n, runtime.StageMaintenance)

	st := waitFor(t, n, statusPtr, "status in maintenance", func(r *runtime.MachineStatus) bool {
		return r.TypedSpec().Stage == runtime.StageMaintenance
	})
	if st.TypedSpec().Status.Ready {
		t.Fatal("a node in maintenance mode reports ready")
	}

	// An invalid config is refused, recorded, and the node stays put.
	_, err := n.ApplyConfiguration(ctx, []byte("version: v1alpha1\nmachine:\n  type: boss\n"), machine.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), `unknown machine type "boss"`) {
		t.Fatalf("invalid apply: %v", err)
	}

	rec := waitFor(t, n, errorPtr, "config load error", func(r *runtime.ConfigLoadError) bool { return r.TypedSpec().Error != "" })
	if !strings.Contains(rec.TypedSpec().Error, `unknown machine type "boss"`) {
		t.Fatalf("recorded error %q", rec.TypedSpec().Error)
	}

	if got, _ := bus.GetAs[*runtime.MachineStage](ctx, n.Store(), stagePtr); got.TypedSpec().Stage != runtime.StageMaintenance {
		t.Fatalf("stage after a refused config: %s", got.TypedSpec().Stage)
	}

	// A valid one is persisted and boots the node.
	cfg := workerConfig(t, hostname("maint-1"))

	res, err := n.ApplyConfiguration(ctx, cfg, machine.ApplyOptions{Mode: machine.ModeAuto})
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(res.Message, "leaving maintenance mode") {
		t.Fatalf("message %q", res.Message)
	}

	waitReady(t, n)

	persisted, err := os.ReadFile(filepath.Join(n.dir, "state", machine.ConfigFile))
	if err != nil || !bytes.Equal(persisted, cfg) {
		t.Fatalf("persisted config differs from the applied one (%v)", err)
	}

	if fi, err := os.Stat(filepath.Join(n.dir, "state", machine.ConfigFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file mode: %v %v", fi.Mode(), err)
	}

	if hostnameOf(t, n) != "maint-1" {
		t.Fatal("active config is not the applied one")
	}

	// What Talos users query about the node itself: its role and identity.
	waitFor(t, n, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineTypeType, ID: config.MachineTypeID}, "machine type",
		func(r *config.MachineType) bool { return r.TypedSpec().MachineType == "worker" })

	id, err := n.Identity()
	if err != nil {
		t.Fatal(err)
	}

	waitFor(t, n, bus.Pointer{Namespace: "cluster", Type: cluster.IdentityType, ID: cluster.IdentityID}, "node identity",
		func(r *cluster.Identity) bool { return r.TypedSpec().NodeID == id })

	// The event stream saw the refusal, the tasks and the services.
	types := n.eventTypes()
	for _, want := range []string{"machine.ConfigLoadErrorEvent", "machine.TaskEvent", "machine.SequenceEvent", "machine.ServiceStateEvent"} {
		if types[want] == 0 {
			t.Errorf("no %s in the event stream: %v", want, types)
		}
	}
}

func TestApplyModes(t *testing.T) {
	n := startNode(t, "", workerConfig(t, hostname("start")))
	ctx := context.Background()

	waitReady(t, n)

	statePath := filepath.Join(n.dir, "state", machine.ConfigFile)
	version := func() uint64 {
		r, err := n.Store().Get(ctx, configPtr)
		if err != nil {
			t.Fatal(err)
		}

		return r.Metadata().Version
	}

	v0 := version()

	// Dry run: a diff, and nothing changes.
	res, err := n.ApplyConfiguration(ctx, workerConfig(t, hostname("dry")), machine.ApplyOptions{Mode: machine.ModeNoReboot, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}

	// The hostname is the HostnameConfig's: the change says so. (The
	// document is not wholly folded, so it is listed as the effective
	// change and as the document's own.)
	if lines := strings.Split(strings.TrimSuffix(res.Diff, "\n"), "\n"); len(lines) == 0 || slices.ContainsFunc(lines, func(l string) bool {
		return l != "~ HostnameConfig.hostname: \"start\" -> \"dry\""
	}) {
		t.Fatalf("dry-run diff:\n%s", res.Diff)
	}

	if version() != v0 || hostnameOf(t, n) != "start" {
		t.Fatal("a dry run changed the active config")
	}

	// no-reboot refuses what needs a reboot, naming the fields.
	before, _ := os.ReadFile(statePath)

	_, err = n.ApplyConfiguration(ctx, workerConfig(t, hostname("start"), `machine: {env: {HTTP_PROXY: "http://p:3128"}, files: [{path: /var/x, content: y, op: create}]}`), machine.ApplyOptions{Mode: machine.ModeNoReboot})
	if !errors.Is(err, machine.ErrRebootRequired) || !strings.HasSuffix(err.Error(), "changes cannot be applied without a reboot: machine.files, machine.env.HTTP_PROXY") {
		t.Fatalf("no-reboot refusal: %v", err)
	}

	if after, _ := os.ReadFile(statePath); !bytes.Equal(before, after) || version() != v0 {
		t.Fatal("a refused apply changed something")
	}

	// no-reboot applies a live change: new version, persisted.
	live := workerConfig(t, hostname("live"))

	if res, err = n.ApplyConfiguration(ctx, live, machine.ApplyOptions{Mode: machine.ModeAuto}); err != nil || res.Mode != machine.ModeNoReboot {
		t.Fatalf("auto apply: %+v %v", res, err)
	}

	if version() <= v0 || hostnameOf(t, n) != "live" {
		t.Fatal("no-reboot apply did not take effect")
	}

	if after, _ := os.ReadFile(statePath); !bytes.Equal(after, live) {
		t.Fatal("no-reboot apply was not persisted")
	}

	// staged: persisted for the next boot, not active now.
	staged := workerConfig(t, hostname("staged"))

	if _, err := n.ApplyConfiguration(ctx, staged, machine.ApplyOptions{Mode: machine.ModeStaged}); err != nil {
		t.Fatal(err)
	}

	if hostnameOf(t, n) != "live" {
		t.Fatal("staged apply changed the running config")
	}

	if after, _ := os.ReadFile(statePath); !bytes.Equal(after, staged) {
		t.Fatal("staged config not persisted")
	}

	// try: active at once, not persisted, reverted after the timeout.
	if _, err := n.ApplyConfiguration(ctx, workerConfig(t, hostname("trial")), machine.ApplyOptions{Mode: machine.ModeTry, TryTimeout: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}

	if hostnameOf(t, n) != "trial" {
		t.Fatal("try apply not active")
	}

	waitFor(t, n, configPtr, "try revert", func(r *config.MachineConfig) bool { return r.TypedSpec().Config.Machine.Network.Hostname == "live" })

	if after, _ := os.ReadFile(statePath); !bytes.Equal(after, staged) {
		t.Fatal("a try apply touched the persisted config")
	}

	// try, then confirmed by another apply: no revert.
	if _, err := n.ApplyConfiguration(ctx, workerConfig(t, hostname("trial2")), machine.ApplyOptions{Mode: machine.ModeTry, TryTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}

	if !n.TryPending() {
		t.Fatal("try apply has no revert pending")
	}

	confirmed := workerConfig(t, hostname("confirmed"))
	if _, err := n.ApplyConfiguration(ctx, confirmed, machine.ApplyOptions{Mode: machine.ModeNoReboot}); err != nil {
		t.Fatal(err)
	}

	// The confirmation cancelled the pending revert (the revert itself was
	// shown to happen above).
	if n.TryPending() {
		t.Fatal("a confirmed try still has a revert pending")
	}

	if hostnameOf(t, n) != "confirmed" {
		t.Fatalf("a confirmed try was reverted: hostname %s", hostnameOf(t, n))
	}

	// reboot mode: the node reboots in-process and comes back with it.
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()

	stages, err := n.Store().Watch(wctx, stagePtr)
	if err != nil {
		t.Fatal(err)
	}

	if res, err := n.ApplyConfiguration(ctx, workerConfig(t, `machine: {env: {A: "1"}}`, hostname("rebooted")), machine.ApplyOptions{Mode: machine.ModeAuto}); err != nil || res.Mode != machine.ModeReboot {
		t.Fatalf("auto apply needing a reboot: %+v %v", res, err)
	}

	var seen []runtime.Stage

	for len(seen) == 0 || seen[len(seen)-1] != runtime.StageRunning || !slices.Contains(seen, runtime.StageRebooting) {
		select {
		case ev := <-stages.Events():
			if r, ok := ev.Resource.(*runtime.MachineStage); ok && ev.Type == bus.Updated {
				seen = append(seen, r.TypedSpec().Stage)
			}
		case <-wctx.Done():
			t.Fatalf("stages seen: %v\n%s", seen, n.console.String())
		}
	}

	if want := []runtime.Stage{runtime.StageRebooting, runtime.StageBooting, runtime.StageRunning}; !slices.Equal(seen, want) {
		t.Fatalf("stages %v, want %v", seen, want)
	}

	if hostnameOf(t, n) != "rebooted" || os.Getenv("A") != "1" {
		t.Fatalf("after reboot: hostname %s, A=%q", hostnameOf(t, n), os.Getenv("A"))
	}
}

// TestPersistFalseIsRefused: as in Talos, a config that does not persist
// is refused (a node would lose it at its next boot); the node waits in
// maintenance mode and says why.
func TestPersistFalseIsRefused(t *testing.T) {
	n := startNode(t, "", workerConfig(t, "persist: false"))

	waitStage(t, n, runtime.StageMaintenance)

	rec := waitFor(t, n, errorPtr, "config load error", func(r *runtime.ConfigLoadError) bool { return r.TypedSpec().Error != "" })
	if !strings.Contains(rec.TypedSpec().Error, ".persist should be enabled") {
		t.Fatalf("load error %q does not say why", rec.TypedSpec().Error)
	}

	if _, err := os.Stat(filepath.Join(n.dir, "state", machine.ConfigFile)); !os.IsNotExist(err) {
		t.Fatalf("the refused config was written (%v)", err)
	}
}

func TestResetWipesAndReturnsToMaintenance(t *testing.T) {
	n := startNode(t, "", workerConfig(t, "machine: {files: [{path: /var/etc/motd, content: hello, op: create}]}"))
	ctx := context.Background()

	waitReady(t, n)

	motd := filepath.Join(n.dir, "ephemeral", "var", "etc", "motd")
	if b, err := os.ReadFile(motd); err != nil || string(b) != "hello" {
		t.Fatalf("machine.files not written under EPHEMERAL: %q %v", b, err)
	}

	if err := n.Reset(ctx, machine.ResetOptions{SystemLabelsToWipe: []string{"BOGUS"}}); err == nil || !strings.Contains(err.Error(), `unknown system label "BOGUS"`) {
		t.Fatalf("bad label: %v", err)
	}

	// Only EPHEMERAL: the config survives and the node boots again with it.
	if err := n.Reset(ctx, machine.ResetOptions{Reboot: true, SystemLabelsToWipe: []string{"EPHEMERAL"}}); err != nil {
		t.Fatal(err)
	}

	waitReady(t, n)

	if _, err := os.Stat(filepath.Join(n.dir, "state", machine.ConfigFile)); err != nil {
		t.Fatal("EPHEMERAL-only reset removed the config")
	}

	identity, err := os.ReadFile(filepath.Join(n.dir, "state", machine.IdentityFile))
	if err != nil {
		t.Fatal(err)
	}

	// Everything: back to maintenance, STATE empty.
	if err := n.Reset(ctx, machine.ResetOptions{Reboot: true, Graceful: true}); err != nil {
		t.Fatal(err)
	}

	waitStage(t, n, runtime.StageMaintenance)

	// The config is gone; the identity was wiped and made anew.
	if _, err := os.Stat(filepath.Join(n.dir, "state", machine.ConfigFile)); !os.IsNotExist(err) {
		t.Fatalf("STATE not wiped: config still there (%v)", err)
	}

	if after, _ := os.ReadFile(filepath.Join(n.dir, "state", machine.IdentityFile)); bytes.Equal(after, identity) {
		t.Fatal("the node identity survived a STATE wipe")
	}

	if !strings.Contains(n.console.String(), "nothing to leave") {
		t.Fatal("graceful reset did not try to leave etcd")
	}
}

// An upgrade's reboot drains the node's Kubernetes first, with the stage
// saying upgrading; a drain that fails is reported and the reboot goes on
// (the new slot is written by then).
func TestRebootForUpgradeDrainsFirst(t *testing.T) {
	type call struct {
		stage    runtime.Stage
		services int
	}

	calls := make(chan call, 2)

	var n *testNode

	n = startNodeWith(t, "", workerConfig(t), func(o *machine.Options) {
		o.Drain = func(ctx context.Context, w io.Writer) error {
			st, err := bus.GetAs[*runtime.MachineStage](ctx, n.Store(), stagePtr)
			if err != nil {
				return err
			}

			svcs, _ := n.Store().List(ctx, bus.Kind{Namespace: runtime.NamespaceRuntime, Type: v1alpha1.ServiceType})
			calls <- call{st.TypedSpec().Stage, len(svcs)}

			fmt.Fprintln(w, "[talos] cordoned node test")

			return errors.New("the API server is not reachable")
		}
	})

	waitReady(t, n)

	if err := n.RebootForUpgrade(context.Background()); err != nil {
		t.Fatal(err)
	}

	select {
	case c := <-calls:
		if c.stage != runtime.StageUpgrading || c.services == 0 {
			t.Fatalf("drained at stage %q with %d services, want upgrading with the services still there", c.stage, c.services)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the upgrade's reboot did not drain")
	}

	waitReady(t, n)

	for _, want := range []string{"[talos] cordoned node test", "[talos] drain: the API server is not reachable; going on"} {
		if !strings.Contains(n.console.String(), want) {
			t.Errorf("console lacks %q", want)
		}
	}

	if len(calls) != 0 {
		t.Error("a plain boot drained")
	}

	// A graceful reset drains too (then leaves etcd); a forced shutdown
	// does not, a plain one does.
	if err := n.Reset(context.Background(), machine.ResetOptions{Reboot: true, Graceful: true, SystemLabelsToWipe: []string{"EPHEMERAL"}}); err != nil {
		t.Fatal(err)
	}

	select {
	case c := <-calls:
		if c.stage != runtime.StageResetting {
			t.Errorf("reset drained at stage %q", c.stage)
		}
	default:
		t.Fatal("a graceful reset did not drain") // Reset returns once its sequence ran
	}

	waitReady(t, n)

	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	if len(calls) != 0 {
		t.Error("a forced shutdown drained")
	}
}

func TestGracefulShutdownDrains(t *testing.T) {
	drained := make(chan runtime.Stage, 1)

	var n *testNode

	n = startNodeWith(t, "", workerConfig(t), func(o *machine.Options) {
		o.Drain = func(ctx context.Context, _ io.Writer) error {
			st, err := bus.GetAs[*runtime.MachineStage](ctx, n.Store(), stagePtr)
			if err == nil {
				drained <- st.TypedSpec().Stage
			}

			return err
		}
	})

	waitReady(t, n)

	if err := n.ShutdownGracefully(context.Background()); err != nil {
		t.Fatal(err)
	}

	select {
	case st := <-drained:
		if st != runtime.StageShuttingDown {
			t.Errorf("drained at stage %q", st)
		}
	default:
		t.Fatal("a graceful shutdown did not drain")
	}
}

// A Docker node's $USERDATA seeds an empty node, but a config persisted
// by apply-config wins, so it survives the container's restart.
func TestPlatformConfigSeedsOnlyAnEmptyNode(t *testing.T) {
	dir := t.TempDir()
	seed := func(o *machine.Options) {
		o.PlatformConfig = workerConfig(t, hostname("from-userdata"))
	}

	first := startNodeWith(t, dir, nil, seed)
	waitReady(t, first)

	if h := hostnameOf(t, first); h != "from-userdata" {
		t.Fatalf("first boot hostname %q, want the platform config's", h)
	}

	if !strings.Contains(first.console.String(), "loaded config from the platform ($USERDATA)") {
		t.Fatalf("console does not name the platform as the source:\n%s", first.console.String())
	}

	// What an apply-config would leave on STATE.
	applied := workerConfig(t, hostname("from-apply"))
	if err := os.WriteFile(filepath.Join(dir, "state", machine.ConfigFile), applied, 0o600); err != nil {
		t.Fatal(err)
	}

	first.Shutdown(context.Background()) //nolint:errcheck // the stop is checked below
	if err := <-first.done; err != nil && !errors.Is(err, machine.ErrPowerOff) {
		t.Fatal(err)
	}
	first.done <- nil // for the cleanup

	second := startNodeWith(t, dir, nil, seed)
	waitReady(t, second)

	if h := hostnameOf(t, second); h != "from-apply" {
		t.Fatalf("restarted node hostname %q, want the persisted config's", h)
	}
}

func TestInvalidPersistedConfigWaitsInMaintenance(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, "state", machine.ConfigFile), []byte("machine: {colour: red}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	n := startNode(t, dir, nil)

	waitStage(t, n, runtime.StageMaintenance)
	rec := waitFor(t, n, errorPtr, "load error", func(r *runtime.ConfigLoadError) bool { return r.TypedSpec().Error != "" })

	if !strings.Contains(rec.TypedSpec().Error, `unknown field "colour"`) {
		t.Fatalf("error %q", rec.TypedSpec().Error)
	}

	_ = configs.ModeContainer
}
