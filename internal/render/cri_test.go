package render_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

// A CRI part containerd would refuse is refused by validation (render.Load,
// what talosctl validate, apply-config and the boot run), naming the file
// and the key, before anything is written.
func TestCRIPartContainerdRefuses(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ part, key string }{
		{"version = \"three\"\n", "version"},
		{"[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\npod_annotations = \"oops\"\n",
			`plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.pod_annotations`},
		{"[plugins.\"io.containerd.cri.v1.runtime\".cni]\nbin_dirs = \"/opt/cni/bin\"\n", `plugins."io.containerd.cri.v1.runtime".cni.bin_dirs`},
		{"[plugins.\"io.containerd.cri.v1.runtime\".containerd]\ndefault_runtime_name = \"kata\"\n",
			`plugins."io.containerd.cri.v1.runtime".containerd.default_runtime_name`},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()

			for _, mode := range []configs.Mode{configs.ModeMetal, configs.ModeContainer} {
				_, worker := gen(t)
				worker.V1Alpha1().Machine.Files = []configs.MachineFile{{Path: "/etc/cri/conf.d/20-customization.part", Op: "create", Content: tc.part}}

				data, err := worker.Encode()
				if err != nil {
					t.Fatal(err)
				}

				_, _, err = render.Load(data, mode)
				if err == nil {
					t.Fatalf("%s: accepted", mode)
				}

				want := "machine.files[0].content: cri: /etc/cri/conf.d/20-customization.part: " + tc.key + ": "
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error lacks %q:\n%v", mode, want, err)
				}
			}
		})
	}
}

// Registry hosts files from machine.files are rendered where containerd
// reads them (its config_path), checked by containerd's hosts.toml parser.
func TestUserHostsFiles(t *testing.T) {
	t.Parallel()

	const dir = "/etc/cri/conf.d/hosts/reg.example_5000_"

	_, worker := gen(t)
	worker.Machine.Files = []configs.MachineFile{{Path: dir + "/hosts.toml", Op: "create", Content: "server = \"https://reg.example:5000\"\n"}}

	arts := mustRender(t, worker, render.Options{})
	if got := file(t, arts, "fs/system/etc/cri/conf.d/hosts/reg.example_5000_/hosts.toml"); !strings.Contains(got, "reg.example:5000") {
		t.Errorf("hosts.toml = %q", got)
	}

	if _, ok := arts.Get("fs" + dir + "/hosts.toml"); ok {
		t.Errorf("rendered at %s too, where containerd does not read it", dir)
	}

	for _, tc := range []struct {
		name  string
		files []configs.MachineFile
		path  string
		msg   string
	}{
		{"the registry machine.registries configures", []configs.MachineFile{{Path: "/etc/cri/conf.d/hosts/docker.io/hosts.toml", Op: "create", Content: "server = \"https://x\"\n"}},
			"machine.files[0].path", "machine.registries makes this file too"},
		{"a hosts.toml containerd cannot parse", []configs.MachineFile{{Path: "/var/x", Op: "create"}, {Path: dir + "/hosts.toml", Op: "create", Content: "[host.\"https://m\"]\ncapabilities = \"pull\"\n"}},
			"machine.files[1].content", "containerd cannot parse it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, worker := gen(t)
			worker.Machine.Files = tc.files

			err := render.Check(worker, configs.ModeMetal)

			errs, ok := errors.AsType[*configs.Errors](err)
			if !ok || len(errs.List) != 1 {
				t.Fatalf("error = %v, want one problem", err)
			}

			ve, _ := errors.AsType[*configs.ValidationError](errs.List[0])
			if ve == nil || ve.Path != tc.path || !strings.Contains(ve.Msg, tc.msg) {
				t.Errorf("problem = %v, want %s: %s", errs.List[0], tc.path, tc.msg)
			}
		})
	}
}
