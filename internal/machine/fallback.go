package machine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/sequencer"
)

// A boot never dies of its config. When a boot task fails after the config
// was loaded (user files, disks, env, kernel settings, services that
// refuse it: anything in bootSequence), the node keeps the config aside on
// STATE, says why (console, event, ConfigLoadErrors "boot"), undoes what
// the boot started and boots again with the last config that brought it
// to running. Without one (a first boot) it waits in maintenance mode
// instead, as for a config that does not validate. A config that failed
// is never booted again by the fallback: only the last good config is,
// and only when it differs from the one that failed; seeds that failed
// (--config, talos.config=, $USERDATA) are skipped at later boots.
//
// Container mode boots again in-process; metal reboots the machine, which
// is the only way to undo sysctls, modules and files under /. On metal the
// first boot of an OS upgrade is left to RevertFailedUpgrade (machined
// calls it when Run fails): a failure there reverts the slot, not the
// config; should the previous slot then fail with the same config, that
// boot falls back the config.

// bootError is a boot sequence that failed with a config loaded.
type bootError struct {
	loaded      loadedConfig
	phase, task string
	err         error
}

func (e *bootError) Error() string { return e.err.Error() }
func (e *bootError) Unwrap() error { return e.err }

// brokenBootTask is where a BROKEN_BOOT build fails every boot: the OS's
// failure, which an upgrade's revert handles, not the config's.
const brokenBootTask = "failOnPurpose"

// fallbackAction is what Run does after a failed boot.
type fallbackAction int

const (
	// fallbackNone: the boot error stands (machined reports it fatal).
	fallbackNone fallbackAction = iota
	// fallbackBootAgain: boot again in-process (container mode).
	fallbackBootAgain
	// fallbackReboot: reboot the machine (metal).
	fallbackReboot
)

// noteSequence follows the sequencer to name the task that failed a boot.
func (n *Node) noteSequence(kind, name, action string) {
	n.mu.Lock()
	defer n.mu.Unlock()

	switch {
	case kind == "sequence" && action == "start":
		n.failedPhase, n.failedTask = "", ""
	case kind == "task" && action == "fail" && n.failedTask == "":
		n.failedTask = name
	case kind == "phase" && action == "fail" && n.failedPhase == "":
		n.failedPhase = name
	}
}

func (n *Node) lastFailure() (phase, task string) {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.failedPhase, n.failedTask
}

// stateOnDisk says whether STATE outlives a reboot: always in container
// mode (a directory), on metal once a STATE partition is open.
func (n *Node) stateOnDisk() bool {
	if !n.opts.Platform.IsMetal() {
		return true
	}

	return n.volumes.StateOpen()
}

// errSameConfig: the last good config cannot replace the one that failed.
var errSameConfig = errors.New("the config that failed is the last good config itself")

// lastGood returns the last good config when it may replace failed: it
// exists, differs and still validates here. Otherwise the error says why
// not; none at all (a first boot) is no error.
func (n *Node) lastGood(failed []byte) (loadedConfig, error) {
	data, err := n.state.LoadLastGood()
	switch {
	case err != nil:
		return loadedConfig{}, err
	case data == nil:
		return loadedConfig{}, nil
	case slices.Equal(data, failed):
		return loadedConfig{}, errSameConfig
	}

	cfg, err := n.check(data)
	if err != nil {
		return loadedConfig{}, fmt.Errorf("the last good config no longer validates: %w", err)
	}

	return loadedConfig{cfg: cfg, data: data, source: n.state.ConfigPath() + " (the last good config, restored)"}, nil
}

// fallBack handles a failed boot; see the file comment.
func (n *Node) fallBack(ctx context.Context, bootErr error) fallbackAction {
	var be *bootError
	if !errors.As(bootErr, &be) || be.task == brokenBootTask || errors.Is(bootErr, errRebootNow) || ctx.Err() != nil {
		return fallbackNone
	}

	metal := n.opts.Platform.IsMetal()

	n.logf("config fallback: the boot with the config from %s failed: %v", be.loaded.source, be.err)

	switch {
	case !be.loaded.cfg.Persist:
		n.logf("config fallback: not possible: the config has persist: false, so STATE holds nothing to move aside or fall back from")
		return fallbackNone
	case !n.stateOnDisk():
		n.logf("config fallback: not possible: STATE is not on disk yet, so nothing would outlive the reboot")
		return fallbackNone
	}

	// META (metal, or a test's image) says an upgrade's first boot: its
	// revert (machined's RevertFailedUpgrade) goes first.
	if _, ok := n.volumes.MetaTag(meta.Upgrade); ok {
		n.logf("config fallback: this was the first boot of an OS upgrade: the upgrade is reverted first, the config stays")
		return fallbackNone
	}

	good, why := n.lastGood(be.loaded.data)
	if errors.Is(why, errSameConfig) {
		n.logf("config fallback: not possible: %v", why)
		return fallbackNone
	}

	if why != nil {
		n.logf("config fallback: %v", why)
	}

	spec := runtime.ConfigLoadErrorSpec{
		Source: be.loaded.source, Error: be.err.Error(), Time: time.Now().UTC(), Phase: be.phase, Task: be.task,
		FailedConfigPath: n.state.path(FailedConfigFile),
		Action:           "booted the last good config (" + n.state.path(LastGoodConfigFile) + ") instead",
	}

	// Kept whole when the node goes on under its own trust; redacted when
	// it waits in maintenance mode, where anyone who reaches it may apply
	// a config and then read STATE.
	kept := be.loaded.data
	if good.cfg == nil {
		spec.Action = "no last good config to fall back to: waiting in maintenance mode for talosctl apply-config --insecure"

		red, err := be.loaded.cfg.EncodeRedacted()
		if err != nil {
			n.logf("config fallback: not possible: redact the failed config: %v", err)
			return fallbackNone
		}

		kept = red
	}

	if err := n.seq.Run(ctx, n.fallbackSequence(be.loaded, good, kept, spec)); err != nil {
		n.logf("config fallback: %v", err)
		return fallbackNone
	}

	next := "the last good config"
	if good.cfg == nil {
		next = "maintenance mode"
	}

	if metal {
		n.logf("config fallback: rebooting into %s", next)
		return fallbackReboot
	}

	n.logf("config fallback: booting again into %s", next)

	return fallbackBootAgain
}

// fallbackSequence undoes what the failed boot started and makes STATE
// hold the last good config (or none).
func (n *Node) fallbackSequence(failed, good loadedConfig, kept []byte, spec runtime.ConfigLoadErrorSpec) *sequencer.Sequence {
	metal := n.opts.Platform.IsMetal()
	seq := &sequencer.Sequence{Name: "configFallback"}

	// What would not stop is reported and left: the fallback goes on, as
	// a reboot would.
	seq.Append("stopEverything", task("stopAllServices", func(ctx context.Context, w io.Writer) error {
		if err := n.stopServices(ctx, w); err != nil {
			fmt.Fprintf(w, "[talos] config fallback: %v; going on\n", err)
		}

		return nil
	}))
	seq.AppendWhen(n.ownsRuntime(), "releaseRuntime", task("stopAllPods", func(ctx context.Context, w io.Writer) error {
		if err := n.releaseRuntime(ctx, w); err != nil {
			fmt.Fprintf(w, "[talos] config fallback: %v; going on\n", err)
		}

		return nil
	}))
	seq.Append("config", task("restoreLastGoodConfig", func(ctx context.Context, w io.Writer) error {
		if err := n.state.keepFailed(failed.data, kept, spec); err != nil {
			return fmt.Errorf("keep the failed config: %w", err)
		}

		fmt.Fprintf(w, "[talos] config fallback: kept the failed config as %s\n", spec.FailedConfigPath)

		if good.cfg != nil {
			if err := n.state.SaveConfig(good.data); err != nil {
				return fmt.Errorf("restore the last good config: %w", err)
			}

			fmt.Fprintf(w, "[talos] config fallback: restored %s as %s\n", n.state.path(LastGoodConfigFile), n.state.ConfigPath())
		} else if err := n.state.RemoveConfig(failed.data); err != nil {
			return fmt.Errorf("move the failed config aside: %w", err)
		}

		n.publishBootRecord(ctx, true)
		n.forgetFailedBoot(ctx)

		return nil
	}))
	seq.AppendWhen(metal, "unmountSystem", task("unmountSystemVolumes", n.volumes.UnmountSystem))

	return seq
}

// forgetFailedBoot drops what the failed boot left in memory: the next
// boot reads STATE (not --config again), and nothing acts on the failed
// config meanwhile (apid's identity, networkd's links, the env).
func (n *Node) forgetFailedBoot(ctx context.Context) {
	n.mu.Lock()
	n.booted, n.staged = true, false
	n.mu.Unlock()

	if err := n.forgetConfig(ctx); err != nil {
		n.logf("config fallback: withdraw the failed config: %v", err)
	}

	n.restoreEnv()
}

// loadTimeFallback handles STATE's config refused at load (it no longer
// decodes or validates, say after an upgrade tightened validation): the
// last good config takes its place at once, nothing having started yet.
func (n *Node) loadTimeFallback(ctx context.Context, source string, data []byte, loadErr error, w io.Writer) (loadedConfig, bool) {
	good, why := n.lastGood(data)
	if good.cfg == nil {
		if why != nil {
			fmt.Fprintf(w, "[talos] config fallback: %v\n", why)
		}

		return loadedConfig{}, false
	}

	spec := runtime.ConfigLoadErrorSpec{
		Source: source, Error: loadErr.Error(), Time: time.Now().UTC(),
		FailedConfigPath: n.state.path(FailedConfigFile),
		Action:           "loaded the last good config (" + n.state.path(LastGoodConfigFile) + ") instead",
	}

	fmt.Fprintf(w, "[talos] config fallback: the config from %s is refused: %v\n", source, loadErr)

	if err := n.state.keepFailed(data, data, spec); err != nil {
		fmt.Fprintf(w, "[talos] config fallback: keep the failed config: %v\n", err)
		return loadedConfig{}, false
	}

	if err := n.state.SaveConfig(good.data); err != nil {
		fmt.Fprintf(w, "[talos] config fallback: restore the last good config: %v\n", err)
		return loadedConfig{}, false
	}

	n.publishBootRecord(ctx, true)
	fmt.Fprintf(w, "[talos] config fallback: kept the failed config as %s\n", spec.FailedConfigPath)
	fmt.Fprintf(w, "[talos] config fallback: loading the last good config instead\n")

	return good, true
}

// publishBootRecord shows STATE's record as ConfigLoadErrors "boot", at
// every boot (event: only when the failure is new).
func (n *Node) publishBootRecord(ctx context.Context, event bool) {
	rec, err := n.state.loadRecord()
	if err != nil {
		n.logf("config fallback: %v", err)
		return
	}

	if rec == nil || rec.LastSHA256 == "" {
		return
	}

	spec := rec.Last

	if kept, err := n.state.LoadFailedConfig(); err == nil {
		spec.FailedConfig = string(kept)
	}

	n.publishLoadError(ctx, runtime.BootErrorID, spec, event)
}

// bootedGood runs as a boot reaches running: its config is the last good
// one from now on, and no longer a failed one.
func (n *Node) bootedGood(ctx context.Context, loaded loadedConfig, w io.Writer) {
	if !loaded.cfg.Persist || !n.stateOnDisk() {
		return
	}

	saved, err := n.state.SaveLastGood(loaded.data)
	switch {
	case err != nil:
		fmt.Fprintf(w, "[talos] keep the last good config: %v\n", err)
	case saved:
		fmt.Fprintf(w, "[talos] kept the running config as the last good one (%s)\n", n.state.path(LastGoodConfigFile))
	}

	cleared, err := n.state.forgetFailure(loaded.data)
	if err != nil {
		fmt.Fprintf(w, "[talos] config fallback: %v\n", err)
	}

	if cleared {
		fmt.Fprintln(w, "[talos] the config that failed to boot before now runs: its failure record is cleared")

		err := n.store.Destroy(ctx, bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.ConfigLoadErrorType, ID: runtime.BootErrorID}, bus.WithOwner(owner))
		if err != nil && !bus.IsNotFound(err) {
			fmt.Fprintf(w, "[talos] config fallback: %v\n", err)
		}
	}
}

// setEnv exports machine.env to machined and so to every service it
// starts, after undoing what an earlier config of this process set: a
// variable a boot no longer configures (the failed config's, after a
// fallback) does not linger.
func (n *Node) setEnv(env map[string]string) error {
	n.restoreEnv()

	n.envMu.Lock()
	defer n.envMu.Unlock()

	if n.envBase == nil {
		n.envBase = map[string]*string{}
	}

	for _, k := range slices.Sorted(maps.Keys(env)) {
		if _, seen := n.envBase[k]; !seen {
			if v, ok := os.LookupEnv(k); ok {
				n.envBase[k] = &v
			} else {
				n.envBase[k] = nil
			}
		}

		if err := os.Setenv(k, env[k]); err != nil {
			return fmt.Errorf("machine.env %s: %w", k, err)
		}
	}

	return nil
}

// restoreEnv gives every variable a config set its value from before.
func (n *Node) restoreEnv() {
	n.envMu.Lock()
	defer n.envMu.Unlock()

	for k, v := range n.envBase {
		if v == nil {
			os.Unsetenv(k) //nolint:errcheck // only fails for names Setenv refused
		} else {
			os.Setenv(k, *v) //nolint:errcheck // it was set before
		}
	}

	n.envBase = nil
}
