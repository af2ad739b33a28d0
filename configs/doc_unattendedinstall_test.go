package configs_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func rtUnattended(match, more string) string {
	return "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller:\n  image: ghcr.io/siderolabs/installer:v1.14.0\n" +
		"provisioning:\n  diskSelector:\n    match: '" + strings.ReplaceAll(match, "'", "''") + "'\n" + more
}

// TestUnattendedInstallDiskMatch: the expressions the install evaluates
// (internal/storage evaluates them against the disks: the translator's
// forms and those it refused alike), machine.install.disk when the
// expression only names the disk's path, and what is refused at
// validation, saying why.
func TestUnattendedInstallDiskMatch(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		match string
		disk  string // machine.install.disk
		err   string
	}{
		{match: `disk.dev_path == "/dev/vda"`, disk: "/dev/vda"},
		{match: `"/dev/nvme0n1" == disk.dev_path`, disk: "/dev/nvme0n1"},
		{match: `(disk.dev_path == '/dev/sda')`, disk: "/dev/sda"},
		{match: `disk.size > 120u * GB`},
		{match: `disk.size <= 2u * TiB && !disk.readonly && !disk.cdrom`},
		{match: `GiB * 64u < disk.size`},
		{match: `disk.size == 4096u`},
		{match: `disk.transport == "nvme" && !system_disk`},
		{match: `disk.transport == "mmc"`},
		{match: `disk.rotational`},
		{match: `disk.model == "QEMU HARDDISK*"`},
		{match: `disk.model.startsWith("Samsung") && disk.serial.endsWith("X1")`},
		{match: `disk.wwid.contains("5002538") && disk.bus_path == "/pci0000:00/0000:00:05.0/virtio2"`},
		{match: `glob("Samsung SSD 9?0*", disk.model) && disk.uuid == "a" && disk.modalias == "b"`},
		{match: `disk.size > 120u * GB && disk.size < 1u * TB`},
		{match: `disk.transport == "nvme" || disk.transport == "sata"`},
		{match: `disk.transport in ["sata", "nvme"]`},
		{match: `!disk.rotational`},
		{match: `disk.model != "x"`},
		{match: `disk.dev_path == "/dev/sda" && disk.size > 1u * GB`},
		{match: `disk.sub_system == "/sys/class/block"`},
		{match: `disk.model > "a"`},
		{match: `!disk.readonly`},
		{match: `!system_disk`},

		{match: `disk.size == 4096`, err: "disk selector is invalid: at 11: == compares values of one type, not uint and int (disk sizes and the size units are uint: write 100u"},
		{match: `system_disk`, err: "system_disk matches no disk: the install chooses among disks none of which is the system disk yet"},
		{match: `disk.symlinks.exists(s, s == "x")`, err: "disk selector is invalid: at 15: exists() is not a method talosbox reads (startsWith, endsWith, contains, matches)"},
		{match: `disk.size > "big"`, err: "disk selector is invalid: at 11: > compares values of one type, not uint and string"},
		{match: `disk.rotational ? disk.size > 1u : true`, err: "disk selector is invalid: at 17: talosbox does not evaluate the conditional ? : in a disk selector; it reads disk.<field>"},
		{match: `disk.size > `, err: "disk selector is invalid: the expression ends too early"},
		{match: `disk.model == "x`, err: "disk selector is invalid: at 15: a string is not closed"},
		{match: `(disk.rotational`, err: `disk selector is invalid: at 17: want ")", got the end`},
		{match: `disk.size @ 1`, err: `disk selector is invalid: at 11: unexpected character '@'`},
	} {
		t.Run(tt.match, func(t *testing.T) {
			t.Parallel()

			cfg, _, err := configs.Load([]byte(rtText(t, "", rtUnattended(tt.match, ""))), configs.ModeMetal)

			if tt.err != "" {
				rtMatch(t, "error", rtProblems(err), []string{"UnattendedInstallConfig.provisioning.diskSelector.match: " + tt.err})

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if in := cfg.Machine.Install; in.Disk != tt.disk || in.DiskSelector != nil {
				t.Errorf("machine.install disk %q, diskSelector %+v; want %q and none", in.Disk, in.DiskSelector, tt.disk)
			}

			if e, err := configs.DocumentOf[*configs.UnattendedInstallConfig](cfg).Selector(); err != nil || e.String() != tt.match {
				t.Errorf("Selector = %v, %v", e, err)
			}
		})
	}
}

// rtProblems lists a Load error's problems.
func rtProblems(err error) []string {
	var list *configs.Errors
	if !errors.As(err, &list) {
		return nil
	}

	out := make([]string, len(list.List))
	for i, e := range list.List {
		out[i] = e.Error()
	}

	return out
}

func TestUnattendedInstallConfig(t *testing.T) {
	t.Parallel()

	install := func(want configs.InstallConfig) func(*testing.T, *configs.Config) {
		return func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Install == nil || !reflect.DeepEqual(*cfg.Machine.Install, want) {
				t.Errorf("machine.install = %+v, want %+v", cfg.Machine.Install, want)
			}
		}
	}

	const image = "ghcr.io/siderolabs/installer:v1.14.0"

	rtRun(t, []rtCase{
		{name: "folded into machine.install; wipe by default, as in Talos", mode: configs.ModeMetal, docs: rtUnattended(`disk.dev_path == "/dev/vda"`, ""),
			check: install(configs.InstallConfig{Disk: "/dev/vda", Image: image, Wipe: true})},
		{name: "no wipe; the disk chosen by the expression at install", mode: configs.ModeMetal, docs: rtUnattended(`disk.size >= 100u * GB`, "  wipe: false\nreboot: false\n"),
			check: install(configs.InstallConfig{Image: image})},
		{name: "in a container, as machine.install", docs: rtUnattended(`disk.dev_path == "/dev/vda"`, "")},
		{name: "in a container, which does not install, an expression talosbox cannot evaluate", docs: rtUnattended(`disk.transport == "sata" ? true : false`, "reboot: true\n"),
			warns: []string{`UnattendedInstallConfig.provisioning.diskSelector.match: disk selector is invalid: at 26: talosbox does not evaluate the conditional ? :`}},
		{name: "no installer image", mode: configs.ModeMetal,
			docs:  "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller: {}\nprovisioning:\n  diskSelector:\n    match: disk.dev_path == \"/dev/vda\"\n",
			warns: []string{"UnattendedInstallConfig.installer.image: installer.image is not set: the node partitions the disk but cannot write BOOT"}},
		{name: "no disk expression", mode: configs.ModeMetal, docs: "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller:\n  image: " + image + "\n",
			errs: []string{"UnattendedInstallConfig.provisioning.diskSelector.match: provisioning.diskSelector.match is required"}},
		{name: "machine.install's rules, located in the document", mode: configs.ModeMetal,
			docs: "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller:\n  image: 'ghcr.io/x:'\nprovisioning:\n  diskSelector:\n    match: disk.dev_path == \"sda\"\n",
			errs: []string{`UnattendedInstallConfig.installer.image: `, `UnattendedInstallConfig.provisioning.diskSelector.match: install disk "sda" must be a path under /dev/`}},
		{name: "reboot after the install", mode: configs.ModeMetal, docs: rtUnattended(`disk.dev_path == "/dev/vda"`, "reboot: true\n"),
			errs: []string{"UnattendedInstallConfig.reboot: talosbox installs onto the disk in place and runs on from it without rebooting"}},
		{name: "also in the v1alpha1 document", mode: configs.ModeMetal, v1: "machine:\n  install:\n    disk: /dev/sda\n", docs: rtUnattended(`disk.dev_path == "/dev/vda"`, ""),
			errs: []string{"UnattendedInstallConfig: the install is already set in the v1alpha1 document (machine.install): set it in one place"}},
		{name: "an unknown field", docs: rtUnattended(`disk.dev_path == "/dev/vda"`, "  disk: /dev/vda\n"), decodeErr: `unknown field "disk" in UnattendedInstallConfig.provisioning`},
		{name: "a wrong type", docs: rtUnattended(`disk.dev_path == "/dev/vda"`, "reboot: often\n"), decodeErr: "UnattendedInstallConfig.reboot: "},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, rtUnattended(`disk.model.startsWith("Samsung") && disk.size > 100u * GB`, "  wipe: false\nreboot: false\n"))
		rtRoundTrip(t, "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller: {}\nprovisioning:\n  diskSelector:\n    match: disk.dev_path == \"/dev/vda\"\n")
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\nprovisioning:\n  diskSelector:\n    match: disk.dev_path == \"/dev/sdb\"\n"},
			{"json", `[{"op": "replace", "path": "/UnattendedInstallConfig/provisioning/diskSelector/match", "value": "disk.dev_path == \"/dev/sdb\""}]`},
		} {
			if in := rtPatched(t, rtUnattended(`disk.dev_path == "/dev/vda"`, ""), p.patch).Machine.Install; in.Disk != "/dev/sdb" || in.Image != image {
				t.Errorf("%s: machine.install %+v", p.name, in)
			}
		}
	})
}

// TestUnattendedInstallCompare: a change of the disk expression is a
// change of the config (a node in maintenance mode installs by it), and
// where the node reads it from says where it is.
func TestUnattendedInstallCompare(t *testing.T) {
	t.Parallel()

	load := func(match string) *configs.Config {
		cfg, err := configs.Decode([]byte(rtText(t, "", rtUnattended(match, ""))))
		if err != nil {
			t.Fatal(err)
		}

		return cfg
	}

	for _, tt := range []struct {
		old, new string
		want     []string
	}{
		{`disk.dev_path == "/dev/vda"`, `disk.dev_path == '/dev/vda'`, nil},
		{`disk.dev_path == "/dev/vda"`, `disk.dev_path == "/dev/vdb"`,
			[]string{`~ UnattendedInstallConfig.provisioning.diskSelector.match: "/dev/vda" -> "/dev/vdb"`}},
		{`disk.size > 10u * GiB`, `disk.size > 20u * GiB`,
			[]string{`~ UnattendedInstallConfig.provisioning.diskSelector.match: "disk.size > 10u * GiB" -> "disk.size > 20u * GiB"`}},
		{`disk.dev_path == "/dev/vda"`, `disk.transport == "nvme"`, []string{
			`- UnattendedInstallConfig.provisioning.diskSelector.match: "/dev/vda"`,
			`+ UnattendedInstallConfig.provisioning.diskSelector.match: "disk.transport == \"nvme\""`,
		}},
	} {
		changes, err := configs.Compare(load(tt.old), load(tt.new))
		if err != nil {
			t.Fatal(err)
		}

		got := make([]string, len(changes))
		for i, c := range changes {
			got[i] = c.String()
		}

		if !slices.Equal(got, tt.want) {
			t.Errorf("%s -> %s:\ngot  %q\nwant %q", tt.old, tt.new, got, tt.want)
		}
	}
}
