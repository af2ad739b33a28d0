package machine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// configSource is one place a config may come from, in the order acquire
// asks them.
type configSource struct {
	name string
	// state: STATE's config.yaml, which only apply-config (or the
	// fallback) writes, so it is never skipped as a failed config.
	state bool
	fetch func(context.Context) ([]byte, error)
}

// configSources lists where acquire looks: --config or $TALOSBOX_CONFIG,
// then the one persisted on STATE, then the embedded config and
// talos.config= (metal), the NoCloud seed (talos.platform=nocloud) or
// $USERDATA (container), as Talos's acquire orders them. --config seeds the first boot of this process;
// after that (an in-process reboot) what apply-config persisted on STATE
// wins.
func (n *Node) configSources() []configSource {
	n.mu.Lock()
	booted := n.booted
	n.mu.Unlock()

	state := configSource{name: n.state.ConfigPath(), state: true, fetch: func(context.Context) ([]byte, error) { return n.state.LoadConfig() }}

	var out []configSource

	if booted {
		out = append(out, state)
	}

	if p := n.opts.ConfigPath; p != "" {
		out = append(out, configSource{name: p, fetch: func(ctx context.Context) ([]byte, error) { return platform.FetchConfig(ctx, p) }})
	}

	if !booted {
		out = append(out, state)
	}

	if e := n.embeddedConfig; e != nil {
		out = append(out, configSource{name: "the embedded config", fetch: func(context.Context) ([]byte, error) { return e, nil }})
	}

	if c := n.cmdlineConfig; c != "" {
		out = append(out, configSource{name: platform.ParamConfig + "=" + platform.DescribeSource(c), fetch: func(ctx context.Context) ([]byte, error) {
			return platform.FetchConfig(ctx, c)
		}})
	}

	if n.isNoCloud() {
		// No user-data: the seed gave the network only, and the node
		// waits in maintenance mode for apply-config.
		out = append(out, configSource{name: "the NoCloud seed (user-data)", fetch: n.nocloudUserData})
	}

	if pc := n.opts.PlatformConfig; pc != nil {
		out = append(out, configSource{name: "the platform ($USERDATA)", fetch: func(context.Context) ([]byte, error) { return pc, nil }})
	}

	return out
}

// acquire finds the config in the first source that has one (see
// configSources), then waits in maintenance mode for an apply when none
// has. A config that does not decode or validate is recorded as a
// ConfigLoadError and the node waits in maintenance, unless it is STATE's
// and it ran here before (ranBefore) or the last good config can take its
// place (loadTimeFallback). A seed
// that failed to boot before is skipped: it would fail again.
func (n *Node) acquire(ctx context.Context, w io.Writer) (loadedConfig, error) {
	for _, src := range n.configSources() {
		data, err := src.fetch(ctx)
		if err == nil && data == nil {
			continue
		}

		if err == nil && !src.state {
			failed, ferr := n.state.failedBefore(data)
			if ferr != nil {
				fmt.Fprintf(w, "[talos] %v\n", ferr)
			}

			if failed {
				fmt.Fprintf(w, "[talos] the config from %s failed to boot before (%s): not loading it again; apply a fixed config\n",
					src.name, n.state.path(FailedConfigFile))

				continue
			}
		}

		var cfg *configs.Config
		if err == nil {
			if cfg, err = n.check(data); err == nil {
				fmt.Fprintf(w, "[talos] loaded config from %s\n", src.name)

				return loadedConfig{cfg: cfg, data: data, source: src.name}, nil
			}
		}

		if src.state && data != nil {
			if ran, ok := n.ranBefore(ctx, src.name, data, err, w); ok {
				return ran, nil
			}

			if good, ok := n.loadTimeFallback(ctx, src.name, data, err, w); ok {
				fmt.Fprintf(w, "[talos] loaded config from %s\n", good.source)

				return good, nil
			}
		}

		n.recordLoadError(ctx, src.name, err)
		fmt.Fprintf(w, "[talos] config from %s refused: %v\n", src.name, err)

		break
	}

	n.setStage(ctx, runtime.StageMaintenance)
	fmt.Fprintln(w, "[talos] entering maintenance mode: waiting for a config (talosctl apply-config --insecure)")

	select {
	case offered := <-n.offered:
		n.setStage(ctx, runtime.StageBooting)
		return offered, nil
	case <-ctx.Done():
		return loadedConfig{}, ctx.Err()
	}
}

// mode is what configs are validated for here.
func (n *Node) mode() configs.Mode {
	if n.opts.Platform.IsMetal() {
		return configs.ModeMetal
	}

	return configs.ModeContainer
}

// check decodes and validates a config for this platform.
func (n *Node) check(data []byte) (*configs.Config, error) {
	cfg, _, err := n.load(data)
	if err != nil {
		return nil, err
	}

	if err := n.volumes.CheckInstallable(cfg); err != nil {
		return nil, err
	}

	return cfg, nil
}

func (n *Node) recordLoadError(ctx context.Context, source string, err error) {
	n.publishLoadError(ctx, runtime.LastLoadErrorID, runtime.ConfigLoadErrorSpec{Source: source, Error: err.Error(), Time: time.Now().UTC()}, true)
}

// publishLoadError writes a ConfigLoadError and, for a new one, emits
// Talos's event for it.
func (n *Node) publishLoadError(ctx context.Context, id string, spec runtime.ConfigLoadErrorSpec, event bool) {
	_, merr := n.store.Modify(ctx, bus.NewTyped(runtime.NamespaceRuntime, runtime.ConfigLoadErrorType, id, runtime.ConfigLoadErrorSpec{}), func(r bus.Resource) error {
		*r.(*runtime.ConfigLoadError).TypedSpec() = spec //nolint:forcetypeassert // our own type
		return nil
	}, bus.WithOwner(owner))
	if merr != nil {
		n.logf("record config error: %v", merr)
	}

	if !event {
		return
	}

	fields := map[string]string{"source": spec.Source}
	for k, v := range map[string]string{"phase": spec.Phase, "task": spec.Task, "action": spec.Action} {
		if v != "" {
			fields[k] = v
		}
	}

	n.emit(Event{Type: "machine.ConfigLoadErrorEvent", Message: spec.Error, Fields: fields})
}

// ranBefore boots STATE's config although validation now refuses it when
// that very config brought this node to running before (it is the last
// good one): an OS upgrade whose stricter validation refuses a running
// node's config must not leave the node in maintenance mode, or fall back
// to an older config. The problems are printed and published (ConfigLoadErrors
// "last", machine.ConfigLoadErrorEvent) to be fixed at the next apply, which
// validates; a config that does not even decode is never booted.
func (n *Node) ranBefore(ctx context.Context, source string, data []byte, loadErr error, w io.Writer) (loadedConfig, bool) {
	good, err := n.state.LoadLastGood()
	if err != nil || !bytes.Equal(good, data) {
		return loadedConfig{}, false
	}

	cfg, err := configs.Decode(data)
	if err != nil {
		return loadedConfig{}, false
	}

	fmt.Fprintf(w, "[talos] the config from %s brought this node to running before, but this version refuses it: booting it anyway; fix it with the next apply: %v\n", source, loadErr)
	n.recordLoadError(ctx, source+" (booted anyway: it brought this node to running before)", loadErr)

	return loadedConfig{cfg: cfg, data: data, source: source}, true
}
