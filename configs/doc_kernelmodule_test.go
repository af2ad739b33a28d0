package configs_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestKernelModuleConfig(t *testing.T) {
	t.Parallel()

	module := func(name, params string) string {
		doc := "apiVersion: v1alpha1\nkind: KernelModuleConfig\nname: " + name + "\n"
		if params != "" {
			doc += "parameters: [" + params + "]\n"
		}

		return doc
	}

	modules := func(want ...configs.KernelModule) func(*testing.T, *configs.Config) {
		return func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Kernel == nil || !reflect.DeepEqual(cfg.Machine.Kernel.Modules, want) {
				t.Errorf("machine.kernel = %+v, want modules %+v", cfg.Machine.Kernel, want)
			}
		}
	}

	rtRun(t, []rtCase{
		{name: "folded into machine.kernel.modules", mode: configs.ModeMetal, v1: "machine:\n  install:\n    disk: /dev/vda\n",
			docs:  module("btrfs", "") + "---\n" + module("nvme_core", "multipath=0"),
			check: modules(configs.KernelModule{Name: "btrfs"}, configs.KernelModule{Name: "nvme_core", Parameters: []string{"multipath=0"}})},
		{name: "a module named in both takes the document's parameters", mode: configs.ModeMetal,
			v1:    "machine:\n  install:\n    disk: /dev/vda\n  kernel:\n    modules:\n      - name: nvme_core\n        parameters: [multipath=1]\n      - name: dm_mod\n",
			docs:  module("nvme_core", "multipath=0"),
			check: modules(configs.KernelModule{Name: "nvme_core", Parameters: []string{"multipath=0"}}, configs.KernelModule{Name: "dm_mod"})},
		{name: "in a container, as machine.kernel.modules", docs: module("btrfs", ""),
			warns: []string{"machine.kernel.modules: kernel modules cannot be loaded in container mode"}},
		{name: "no name", docs: "apiVersion: v1alpha1\nkind: KernelModuleConfig\nparameters: [a=b]\n",
			errs: []string{`KernelModuleConfig[""].name: name is required`}},
		{name: "machine.kernel.modules's rules, located in the document", docs: module("bad/name", "") + "---\n" + module("zfs", `"=1"`),
			errs:  []string{`KernelModuleConfig["bad/name"].name: invalid kernel module name "bad/name"`, `KernelModuleConfig["zfs"].parameters`},
			warns: []string{"kernel modules cannot be loaded in container mode"}},
		{name: "an unknown field", docs: module("btrfs", "") + "params: [a=b]\n", decodeErr: `unknown field "params"`},
		{name: "a wrong type", docs: module("btrfs", "") + "parameters: a=b\n", decodeErr: `KernelModuleConfig["btrfs"].parameters: expected a sequence`},
		{name: "one document per module", docs: module("btrfs", "") + "---\n" + module("btrfs", ""), decodeErr: `duplicate document KernelModuleConfig "btrfs"`},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, module("btrfs", "")+"---\n"+module("nvme_core", "multipath=0, io_timeout=30"))
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		// As in Talos, a list in a strategic merge patch is appended.
		for _, p := range []struct {
			name, patch string
			want        []string
		}{
			{"strategic merge", module("nvme_core", "io_timeout=30"), []string{"multipath=0", "io_timeout=30"}},
			{"json", `[{"op": "replace", "path": "/KernelModuleConfig/nvme_core/parameters/0", "value": "multipath=1"}]`, []string{"multipath=1"}},
		} {
			cfg := rtPatched(t, module("btrfs", "")+"---\n"+module("nvme_core", "multipath=0"), p.patch)
			if want := []configs.KernelModule{{Name: "btrfs"}, {Name: "nvme_core", Parameters: p.want}}; !reflect.DeepEqual(cfg.Machine.Kernel.Modules, want) {
				t.Errorf("%s: modules %+v, want %+v", p.name, cfg.Machine.Kernel.Modules, want)
			}
		}

		cfg := rtPatched(t, module("btrfs", "")+"---\n"+module("nvme_core", ""), `[{"op": "remove", "path": "/KernelModuleConfig/btrfs"}]`)
		if want := []configs.KernelModule{{Name: "nvme_core"}}; !reflect.DeepEqual(cfg.Machine.Kernel.Modules, want) {
			t.Errorf("a document removed: modules %+v, want %+v", cfg.Machine.Kernel.Modules, want)
		}
	})
}
