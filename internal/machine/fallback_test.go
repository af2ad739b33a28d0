package machine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/meta/metatest"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/supervisor"
)

var bootErrorPtr = bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.ConfigLoadErrorType, ID: runtime.BootErrorID}

func stateFile(t *testing.T, n *testNode, name string) []byte {
	t.Helper()

	data, err := os.ReadFile(filepath.Join(n.dir, "state", name))
	if err != nil {
		t.Fatal(err)
	}

	return data
}

// writeState puts a config straight into STATE, as an apply in staged mode
// does, but past any validation: how a config that validation misses
// reaches a boot.
func writeState(t *testing.T, n *testNode, data []byte) {
	t.Helper()

	if err := os.WriteFile(filepath.Join(n.dir, "state", machine.ConfigFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// bootRecord waits for the ConfigLoadErrors "boot" a fallback publishes.
func bootRecord(t *testing.T, n *testNode, want string) runtime.ConfigLoadErrorSpec {
	t.Helper()

	r := waitFor(t, n, bootErrorPtr, "the boot's config load error", func(r *runtime.ConfigLoadError) bool {
		return strings.Contains(r.TypedSpec().Error, want)
	})

	return *r.TypedSpec()
}

// fallbacks counts the failed boots the node fell back from.
func fallbacks(n *testNode) int {
	return strings.Count(n.console.String(), "[talos] config fallback: kept the failed config as ")
}

// assertFellBack checks what a fallback from bad to good leaves behind.
func assertFellBack(t *testing.T, n *testNode, good, bad []byte, rec runtime.ConfigLoadErrorSpec, task string) {
	t.Helper()

	if h := hostnameOf(t, n); h != "good" {
		t.Errorf("running hostname %q, want the last good config's", h)
	}

	if got := stateFile(t, n, machine.ConfigFile); !bytes.Equal(got, good) {
		t.Errorf("config.yaml is not the last good config:\n%s", got)
	}

	if got := stateFile(t, n, machine.FailedConfigFile); !bytes.Equal(got, bad) {
		t.Errorf("config.yaml.failed is not the failed config:\n%s", got)
	}

	if fi, err := os.Stat(filepath.Join(n.dir, "state", machine.FailedConfigFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.yaml.failed mode: %v %v", fi.Mode(), err)
	}

	if rec.Task != task || !strings.Contains(rec.Action, "booted the last good config") || rec.FailedConfig != string(bad) ||
		rec.FailedConfigPath != filepath.Join(n.dir, "state", machine.FailedConfigFile) {
		t.Errorf("boot record: task %q (want %q), action %q, failedConfigPath %q, failed config kept: %v",
			rec.Task, task, rec.Action, rec.FailedConfigPath, rec.FailedConfig == string(bad))
	}

	if got := fallbacks(n); got != 1 {
		t.Errorf("%d fallbacks, want exactly one (no loop)", got)
	}

	if n.eventTypes()["machine.ConfigLoadErrorEvent"] == 0 {
		t.Error("no machine.ConfigLoadErrorEvent")
	}
}

// blockPath puts a directory where a machine.files path of a container
// node in dir goes, so that writing the file fails at boot: what no
// validation of the config can see.
func blockPath(t *testing.T, dir, path string) {
	t.Helper()

	if err := os.MkdirAll(filepath.Join(dir, "ephemeral", path, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A staged config whose machine.files cannot be written (a directory in
// the way, which no validation can see) fails its boot: the node keeps it
// aside and comes back on the last good config, without looping, with
// the failed config's env undone.
func TestStagedConfigThatFailsToBootFallsBack(t *testing.T) {
	good := workerConfig(t, hostname("good"))
	n := startNode(t, "", good)
	ctx := context.Background()

	blockPath(t, n.dir, "/var/fallback/d")

	waitReady(t, n)

	if got := stateFile(t, n, machine.LastGoodConfigFile); !bytes.Equal(got, good) {
		t.Fatalf("the config that booted to running is not kept as the last good one:\n%s", got)
	}

	if fi, _ := os.Stat(filepath.Join(n.dir, "state", machine.LastGoodConfigFile)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("config.yaml.last-good mode %v", fi.Mode())
	}

	bad := workerConfig(t, hostname("bad"), "machine: {env: {TB_FALLBACK_ENV: bad}, files: [{path: /var/fallback/d, content: y, op: overwrite}]}")

	if _, err := n.ApplyConfiguration(ctx, bad, machine.ApplyOptions{Mode: machine.ModeStaged}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()

	if err := n.Reboot(ctx); err != nil {
		t.Fatal(err)
	}

	waitStage(t, n, runtime.StageRunning)
	t.Logf("from the reboot into the bad config to running on the last good one: %s", time.Since(start))

	rec := bootRecord(t, n, "/var/fallback/d")
	assertFellBack(t, n, good, bad, rec, "writeUserFiles")

	if rec.Phase != "userSetup" || rec.Source != filepath.Join(n.dir, "state", machine.ConfigFile) {
		t.Errorf("boot record: phase %q, source %q", rec.Phase, rec.Source)
	}

	if v, ok := os.LookupEnv("TB_FALLBACK_ENV"); ok {
		t.Errorf("the failed config's env stays set: TB_FALLBACK_ENV=%q", v)
	}

	// A plain reboot now boots the last good config: the failed one is
	// not tried again, and its record stays for the operator.
	if err := n.Reboot(ctx); err != nil {
		t.Fatal(err)
	}

	waitStage(t, n, runtime.StageRunning)

	if got := fallbacks(n); got != 1 {
		t.Fatalf("the reboot after a fallback fell back again (%d)", got)
	}

	if _, err := n.Store().Get(ctx, bootErrorPtr); err != nil {
		t.Fatalf("the boot record did not survive a reboot: %v", err)
	}
}

// A config whose env the boot refuses (a NUL byte in a value), written
// into STATE past validation, fails its boot; --mode reboot of a config
// whose service keeps refusing it fails at startAllServices instead of
// hanging there. Both fall back.
func TestRefusedEnvAndRefusingServiceFallBack(t *testing.T) {
	refusing := func(o *machine.Options) {
		o.Services = func(_ *machine.Node, cfg *configs.Config) []supervisor.Service {
			if machine.Hostname(cfg) != "refused-by-service" {
				return nil
			}

			// Like containerd: up once its health check passes, which a
			// run that ends at once never lets it.
			return []supervisor.Service{{
				ID: "picky", RestartInterval: 20 * time.Millisecond,
				Runner: supervisor.GoroutineRunner(func(context.Context, io.Writer) error {
					return errors.New("picky refuses this config")
				}),
				Health: &supervisor.HealthCheck{Func: func(context.Context) error { return nil }},
			}}
		}
	}

	good := workerConfig(t, hostname("good"))
	n := startNodeWith(t, "", good, refusing)
	ctx := context.Background()

	waitReady(t, n)

	t.Run("env", func(t *testing.T) {
		bad := workerConfig(t, hostname("bad-env"), "machine: {env: {TB_FALLBACK_A: a, TB_FALLBACK_Z: \"nul\\0byte\"}}")
		writeState(t, n, bad)

		if err := n.Reboot(ctx); err != nil {
			t.Fatal(err)
		}

		waitStage(t, n, runtime.StageRunning)

		rec := bootRecord(t, n, "TB_FALLBACK_Z")
		assertFellBack(t, n, good, bad, rec, "setUserEnvVars")

		if v, ok := os.LookupEnv("TB_FALLBACK_A"); ok {
			t.Errorf("the failed config's env stays set: TB_FALLBACK_A=%q", v)
		}
	})

	t.Run("service", func(t *testing.T) {
		bad := workerConfig(t, hostname("refused-by-service"))

		res, err := n.ApplyConfiguration(ctx, bad, machine.ApplyOptions{Mode: machine.ModeReboot})
		if err != nil || res.Mode != machine.ModeReboot {
			t.Fatalf("apply in reboot mode: %+v %v", res, err)
		}

		rec := bootRecord(t, n, `service "picky" failed 3 times while the node booted: `)
		waitStage(t, n, runtime.StageRunning)

		if rec.Task != "startAllServices" || !strings.Contains(rec.Error, "picky refuses this config") {
			t.Errorf("boot record: task %q, error %q", rec.Task, rec.Error)
		}

		if h := hostnameOf(t, n); h != "good" {
			t.Errorf("running hostname %q after the fallback", h)
		}

		if got := fallbacks(n); got != 2 {
			t.Errorf("%d fallbacks in all, want 2", got)
		}

		if st, ok := n.Supervisor().Status("picky"); ok {
			t.Errorf("the refusing service is still loaded: %s", st.State)
		}
	})
}

// STATE's config refused at load (it no longer validates: say a newer
// version is stricter) is replaced by the last good config at once.
func TestInvalidPersistedConfigLoadsTheLastGood(t *testing.T) {
	good := workerConfig(t, hostname("good"))
	n := startNode(t, "", good)

	waitReady(t, n)

	bad := append(workerConfig(t, hostname("bad")), []byte("colour: red\n")...)
	writeState(t, n, bad)

	if err := n.Reboot(context.Background()); err != nil {
		t.Fatal(err)
	}

	waitStage(t, n, runtime.StageRunning)

	rec := bootRecord(t, n, `unknown field "colour"`)
	if !strings.Contains(rec.Action, "loaded the last good config") || rec.Task != "" {
		t.Errorf("boot record: action %q, task %q", rec.Action, rec.Task)
	}

	if h := hostnameOf(t, n); h != "good" {
		t.Errorf("hostname %q", h)
	}

	if !bytes.Equal(stateFile(t, n, machine.ConfigFile), good) || !bytes.Equal(stateFile(t, n, machine.FailedConfigFile), bad) {
		t.Error("STATE does not hold the last good config with the refused one aside")
	}

	if strings.Contains(n.console.String(), "entering maintenance mode") {
		t.Error("the node went through maintenance mode")
	}
}

// A first boot has no last good config: the node waits in maintenance
// mode, keeps the failed config redacted (anyone may apply a config now),
// and never loads the seed that failed again, not even in a new process.
func TestFirstBootFailureWaitsInMaintenance(t *testing.T) {
	dir := t.TempDir()
	bad := workerConfig(t, hostname("bad"), "machine: {files: [{path: /var/fb/f/g, content: y, op: create}]}")

	blockPath(t, dir, "/var/fb/f/g")

	n := startNode(t, dir, bad)
	waitStage(t, n, runtime.StageMaintenance)

	rec := bootRecord(t, n, "/var/fb/f/g")
	if !strings.Contains(rec.Action, "maintenance mode") || rec.Task != "writeUserFiles" {
		t.Errorf("boot record: action %q, task %q", rec.Action, rec.Task)
	}

	if _, err := os.Stat(filepath.Join(dir, "state", machine.ConfigFile)); !os.IsNotExist(err) {
		t.Errorf("the failed config is still config.yaml (%v)", err)
	}

	kept := stateFile(t, n, machine.FailedConfigFile)

	cfg, err := configs.Decode(bad)
	if err != nil {
		t.Fatal(err)
	}

	token := cfg.Machine.Token
	if token == "" || bytes.Contains(kept, []byte(token)) || !bytes.Contains(kept, []byte("/var/fb/f/g")) {
		t.Errorf("the kept config is not the redacted failed config (token present: %v):\n%s", bytes.Contains(kept, []byte(token)), kept)
	}

	if !strings.Contains(n.console.String(), "failed to boot before") {
		t.Error("the boot after the fallback did not skip the failed --config")
	}

	if got := fallbacks(n); got != 1 {
		t.Errorf("%d fallbacks", got)
	}

	good := workerConfig(t, hostname("good"))
	if _, err := n.ApplyConfiguration(context.Background(), good, machine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}

	waitStage(t, n, runtime.StageRunning)

	if h := hostnameOf(t, n); h != "good" {
		t.Fatalf("hostname %q", h)
	}

	// The same --config in a new process is skipped: STATE's config runs.
	n.Shutdown(context.Background()) //nolint:errcheck // the stop is checked below
	if err := <-n.done; err != nil && !errors.Is(err, machine.ErrPowerOff) {
		t.Fatal(err)
	}
	n.done <- nil

	again := startNode(t, dir, bad)
	waitStage(t, again, runtime.StageRunning)

	if h := hostnameOf(t, again); h != "good" || fallbacks(again) != 0 || !strings.Contains(again.console.String(), "failed to boot before") {
		t.Errorf("restarted with the failed --config: hostname %q, %d fallbacks", h, fallbacks(again))
	}

	// The record outlives the process: it is on STATE.
	if rec := bootRecord(t, again, "/var/fb/f/g"); rec.Task != "writeUserFiles" {
		t.Errorf("the record after a restart: %+v", rec)
	}
}

// A config that booted once and fails now has nothing to fall back to
// but itself: the boot error stands (fatal, as before), never a loop.
func TestFailingLastGoodConfigIsFatal(t *testing.T) {
	cfg := workerConfig(t, hostname("good"), "machine: {files: [{path: /var/once, content: x, op: create}]}")
	n := startNode(t, "", cfg)

	waitReady(t, n)

	// What changed since is the machine, not the config.
	if err := os.Remove(filepath.Join(n.dir, "ephemeral", "var", "once")); err != nil {
		t.Fatal(err)
	}

	blockPath(t, n.dir, "/var/once")

	if err := n.Reboot(context.Background()); err != nil {
		t.Fatal(err)
	}

	select {
	case err := <-n.done:
		if err == nil || !strings.Contains(err.Error(), "/var/once") {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the node did not stop")
	}

	n.done <- nil

	if !strings.Contains(n.console.String(), "not possible: the config that failed is the last good config itself") {
		t.Error("no console line says why there is no fallback")
	}
}

// Consecutive tries revert to the config before the first, not to an
// earlier try: nothing unconfirmed stays in effect.
func TestTryOnTryRevertsToTheConfirmedConfig(t *testing.T) {
	n := startNode(t, "", workerConfig(t, hostname("confirmed")))
	ctx := context.Background()

	waitReady(t, n)

	if _, err := n.ApplyConfiguration(ctx, workerConfig(t, hostname("try-1")), machine.ApplyOptions{Mode: machine.ModeTry, TryTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}

	if _, err := n.ApplyConfiguration(ctx, workerConfig(t, hostname("try-2")), machine.ApplyOptions{Mode: machine.ModeTry, TryTimeout: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, n, configPtr, "the revert", func(r *config.MachineConfig) bool { return r.TypedSpec().Config.Machine.Network.Hostname != "try-2" })

	if h := hostnameOf(t, n); h != "confirmed" {
		t.Fatalf("after the tries reverted the node runs %q, want the confirmed config", h)
	}
}

// The first boot of an OS upgrade that fails is the upgrade's to revert
// (the boot slot, by machined), not the config's: the fallback leaves
// STATE alone and the boot error stands for machined to act on.
func TestFailedUpgradeBootLeavesTheConfig(t *testing.T) {
	path, _ := metatest.Image(t, map[uint8]string{})
	good := workerConfig(t, hostname("good"))
	n := startNodeWith(t, "", good, func(o *machine.Options) { o.MetaPath = path })
	ctx := context.Background()

	waitReady(t, n)

	// What an upgrade records before its reboot; the staged config that
	// will fail comes with it.
	if err := n.MetaWrite(ctx, meta.Upgrade, []byte("A")); err != nil {
		t.Fatal(err)
	}

	blockPath(t, n.dir, "/var/upgrade/f")

	bad := workerConfig(t, hostname("bad"), "machine: {files: [{path: /var/upgrade/f, content: x, op: create}]}")
	writeState(t, n, bad)

	if err := n.Reboot(ctx); err != nil {
		t.Fatal(err)
	}

	select {
	case err := <-n.done:
		if err == nil || !strings.Contains(err.Error(), "/var/upgrade/f") {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the node did not stop")
	}

	n.done <- nil

	if got := stateFile(t, n, machine.ConfigFile); !bytes.Equal(got, bad) {
		t.Error("the fallback changed config.yaml during an upgrade's first boot")
	}

	if _, err := os.Stat(filepath.Join(n.dir, "state", machine.FailedConfigFile)); !os.IsNotExist(err) {
		t.Errorf("the config was moved aside during an upgrade's first boot (%v)", err)
	}

	if !strings.Contains(n.console.String(), "the upgrade is reverted first, the config stays") {
		t.Error("no console line says the upgrade's revert goes first")
	}
}

// A reader (not os:admin) sees a failed boot's record with the failed
// config's secrets masked, and its error.
func TestBootRecordRedactedForReaders(t *testing.T) {
	data := workerConfig(t)

	cfg, err := configs.Decode(data)
	if err != nil {
		t.Fatal(err)
	}

	red, err := runtime.ConfigLoadErrorSpec{Error: "boom", FailedConfig: string(data)}.RedactedYAML()
	if err != nil {
		t.Fatal(err)
	}

	if bytes.Contains(red, []byte(cfg.Machine.Token)) || !bytes.Contains(red, []byte("error: boom")) || !bytes.Contains(red, []byte("failedConfig: ")) {
		t.Fatalf("redacted record:\n%s", red)
	}

	// A failed config that does not even decode is left out.
	red, err = runtime.ConfigLoadErrorSpec{Error: "bad", FailedConfig: "machine: [" + cfg.Machine.Token}.RedactedYAML()
	if err != nil || bytes.Contains(red, []byte(cfg.Machine.Token)) {
		t.Fatalf("redacted record of an undecodable config (%v):\n%s", err, red)
	}
}
