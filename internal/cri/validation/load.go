package validation

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"time"
)

// What the CRI plugins refuse as they load, after the config decoded:
// containerd's criconfig.ValidateRuntimeConfig, ValidateImageConfig and
// ValidateServerConfig (internal to containerd, so not callable), checked
// here on the values decoded into containerd's own types. A plugin that
// refuses its config does not load, and containerd serves on without a
// CRI: a node that looks up and runs no pods. TestLoadChecksMatchContainerd
// runs the runtime plugin's own init on the same configs.
//
// Left to the node, which knows (TestCRIHealth*): cgroup_writable without
// cgroup v2, enable_unprivileged_* on an old kernel, a base_runtime_spec
// file that is not there.

// check is one load-time rule: key is relative to the plugin's section.
type check struct {
	key []string
	err error
}

func loadChecks(decoded map[string]reflect.Value, b *blame) error {
	for _, id := range CRIPlugins {
		v, ok := decoded[id]
		if !ok {
			continue
		}

		var c *check

		switch id {
		case PluginCRIRuntime:
			c = runtimeChecks(v.Elem())
		case PluginCRIImages:
			c = imageChecks(v.Elem())
		case PluginCRIGRPC:
			c = durations(v.Elem(), map[string]string{"StreamIdleTimeout": "stream_idle_timeout"})
		}

		if c != nil {
			return b.error(append([]string{"plugins", id}, c.key...), fmt.Errorf("the CRI plugin refuses it as it loads, and the node would run no pods: %w", c.err))
		}
	}

	return nil
}

// field is a struct field by its Go name path, invalid when containerd
// has no such field (any more).
func field(v reflect.Value, names ...string) reflect.Value {
	for _, n := range names {
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}

		if !v.IsValid() || v.Kind() != reflect.Struct {
			return reflect.Value{}
		}

		v = v.FieldByName(n)
	}

	return v
}

func str(v reflect.Value) string {
	if v.IsValid() && v.Kind() == reflect.String {
		return v.String()
	}

	return ""
}

func boolean(v reflect.Value) bool { return v.IsValid() && v.Kind() == reflect.Bool && v.Bool() }

func runtimeChecks(v reflect.Value) *check {
	name := str(field(v, "ContainerdConfig", "DefaultRuntimeName"))
	runtimes := field(v, "ContainerdConfig", "Runtimes")

	if !runtimes.IsValid() || runtimes.Kind() != reflect.Map {
		return nil
	}

	names := make([]string, 0, runtimes.Len())
	for _, k := range runtimes.MapKeys() {
		names = append(names, k.String())
	}

	slices.Sort(names)

	key := []string{"containerd", "default_runtime_name"}

	switch {
	case name == "":
		return &check{key, errors.New("`default_runtime_name` is empty")}
	case !slices.Contains(names, name):
		return &check{key, fmt.Errorf("no runtime %q in containerd.runtimes (there are: %q)", name, names)}
	}

	for _, n := range names {
		r := runtimes.MapIndex(reflect.ValueOf(n))
		rk := []string{"containerd", "runtimes", n}

		if !boolean(field(r, "PrivilegedWithoutHostDevices")) && boolean(field(r, "PrivilegedWithoutHostDevicesAllDevicesAllowed")) {
			return &check{append(rk, "privileged_without_host_devices_all_devices_allowed"), errors.New("requires privileged_without_host_devices = true")}
		}

		if io := str(field(r, "IOType")); io != "" && io != "streaming" && io != "named_pipe" {
			return &check{append(rk, "io_type"), fmt.Errorf("%q: io_type can only be streaming or named_pipe", io)}
		}
	}

	return durations(v, map[string]string{
		"DrainExecSyncIOTimeout": "drain_exec_sync_io_timeout",
		"StatsCollectPeriod":     "stats_collect_period",
		"StatsRetentionPeriod":   "stats_retention_period",
	})
}

func imageChecks(v reflect.Value) *check {
	mirrors := field(v, "Registry", "Mirrors")
	if mirrors.IsValid() && mirrors.Kind() == reflect.Map && mirrors.Len() > 0 && str(field(v, "Registry", "ConfigPath")) != "" {
		return &check{[]string{"registry", "mirrors"}, errors.New("mirrors cannot be set when config_path is (the node sets it: give mirrors in machine.registries.mirrors)")}
	}

	if auths := field(v, "Registry", "Auths"); auths.IsValid() && auths.Kind() == reflect.Map {
		for _, k := range auths.MapKeys() {
			if _, err := url.Parse(k.String()); err != nil {
				return &check{[]string{"registry", "auths", k.String()}, fmt.Errorf("registry url: %w", err)}
			}
		}
	}

	return durations(v, map[string]string{"ImagePullProgressTimeout": "image_pull_progress_timeout"})
}

// durations checks string fields that must parse as Go durations.
func durations(v reflect.Value, fields map[string]string) *check {
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		s := str(field(v, f))
		if s == "" {
			continue
		}

		if _, err := time.ParseDuration(s); err != nil {
			return &check{[]string{fields[f]}, err}
		}
	}

	return nil
}
