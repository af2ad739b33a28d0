package configs_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func rtUnattended(match, more string) string {
	return "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller:\n  image: ghcr.io/siderolabs/installer:v1.14.0\n" +
		"provisioning:\n  diskSelector:\n    match: '" + strings.ReplaceAll(match, "'", "''") + "'\n" + more
}

// TestUnattendedInstallDiskMatch: the CEL expressions talosbox reads, as
// machine.install's disk or diskSelector, and the ones it refuses.
func TestUnattendedInstallDiskMatch(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		match string
		disk  string
		sel   *configs.InstallDiskSelector
		err   string
	}{
		{match: `disk.dev_path == "/dev/vda"`, disk: "/dev/vda"},
		{match: `"/dev/nvme0n1" == disk.dev_path`, disk: "/dev/nvme0n1"},
		{match: `(disk.dev_path == '/dev/sda')`, disk: "/dev/sda"},
		{match: `disk.size > 120u * GB`, sel: &configs.InstallDiskSelector{Size: "> 120GB"}},
		{match: `disk.size <= 2u * TiB && !disk.readonly && !disk.cdrom`, sel: &configs.InstallDiskSelector{Size: "<= 2TiB"}},
		{match: `GiB * 64u < disk.size`, sel: &configs.InstallDiskSelector{Size: "> 64GiB"}},
		{match: `disk.size == 4096`, sel: &configs.InstallDiskSelector{Size: "== 4096"}},
		{match: `disk.transport == "nvme" && !system_disk`, sel: &configs.InstallDiskSelector{Type: "nvme"}},
		{match: `disk.transport == "mmc"`, sel: &configs.InstallDiskSelector{Type: "sd"}},
		{match: `disk.rotational`, sel: &configs.InstallDiskSelector{Type: "hdd"}},
		{match: `disk.model == "QEMU HARDDISK*"`, sel: &configs.InstallDiskSelector{Model: `QEMU HARDDISK\*`}},
		{match: `disk.model.startsWith("Samsung") && disk.serial.endsWith("X1")`, sel: &configs.InstallDiskSelector{Model: "Samsung*", Serial: "*X1"}},
		{match: `disk.wwid.contains("5002538") && disk.bus_path == "/pci0000:00/0000:00:05.0/virtio2"`,
			sel: &configs.InstallDiskSelector{WWID: "*5002538*", BusPath: "/pci0000:00/0000:00:05.0/virtio2"}},
		{match: `glob("Samsung SSD 9?0*", disk.model) && disk.uuid == "a" && disk.modalias == "b"`,
			sel: &configs.InstallDiskSelector{Model: `Samsung SSD 9\?0*`, UUID: "a", Modalias: "b"}},

		{match: `disk.size > 120u * GB && disk.size < 1u * TB`, err: "disk.size is compared twice: talosbox's disk selector holds one condition on it"},
		{match: `disk.transport == "nvme" || disk.transport == "sata"`, err: "|| (either of two conditions) is not something talosbox's disk selector can say"},
		{match: `disk.transport == "sata"`, err: `disk.transport == "sata": talosbox's disk selector tells disks apart by type (nvme, sd, ssd or hdd), not by the "sata" transport`},
		{match: `!disk.rotational`, err: `!disk.rotational: talosbox's disk selector picks one disk type`},
		{match: `disk.model != "x"`, err: `disk.model != "x": != (a property differing from a value) is not something talosbox's disk selector can say`},
		{match: `disk.dev_path == "/dev/sda" && disk.size > 1u * GB`, err: "disk.dev_path cannot be combined with conditions on the disk's properties"},
		{match: `disk.symlinks.exists(s, s == "x")`, err: "is not a condition talosbox reads"},
		{match: `disk.sub_system == "/sys/class/block"`, err: `talosbox's disk selector has no condition on disk.sub_system`},
		{match: `disk.size > "big"`, err: "disk.size is compared with a number of bytes"},
		{match: `disk.model > "a"`, err: "only disk.size is compared with >"},
		{match: `system_disk`, err: "system_disk is not a condition talosbox reads"},
		{match: `!disk.readonly`, err: "sets no condition talosbox can select a disk by"},
		{match: `disk.size > `, err: "the expression ends early"},
		{match: `disk.model == "x`, err: "a string is not closed"},
		{match: `(disk.rotational`, err: "a parenthesis is not closed"},
		{match: `disk.size @ 1`, err: `unexpected "@"`},
	} {
		t.Run(tt.match, func(t *testing.T) {
			t.Parallel()

			cfg, _, err := configs.Load([]byte(rtText(t, "", rtUnattended(tt.match, ""))), configs.ModeMetal)

			if tt.err != "" {
				// The effective machine.install has no disk then, which its
				// own rule says too.
				rtMatch(t, "error", rtProblems(err), []string{"UnattendedInstallConfig.provisioning.diskSelector.match: ",
					"UnattendedInstallConfig: either install disk or diskSelector should be defined"})

				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err = %v, want it to say %q", err, tt.err)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if in := cfg.Machine.Install; in.Disk != tt.disk || !reflect.DeepEqual(in.DiskSelector, tt.sel) {
				t.Errorf("machine.install disk %q, diskSelector %+v; want %q, %+v", in.Disk, in.DiskSelector, tt.disk, tt.sel)
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
		{name: "no wipe", mode: configs.ModeMetal, docs: rtUnattended(`disk.size >= 100u * GB`, "  wipe: false\nreboot: false\n"),
			check: install(configs.InstallConfig{DiskSelector: &configs.InstallDiskSelector{Size: ">= 100GB"}, Image: image})},
		{name: "in a container, as machine.install", docs: rtUnattended(`disk.dev_path == "/dev/vda"`, "")},
		{name: "in a container, which does not install, an expression talosbox cannot read", docs: rtUnattended(`disk.transport == "sata"`, "reboot: true\n"),
			warns: []string{`UnattendedInstallConfig.provisioning.diskSelector.match: cannot translate "disk.transport == \"sata\""`}},
		{name: "no installer image", mode: configs.ModeMetal,
			docs:  "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller: {}\nprovisioning:\n  diskSelector:\n    match: disk.dev_path == \"/dev/vda\"\n",
			warns: []string{"UnattendedInstallConfig.installer.image: installer.image is not set: the node partitions the disk but cannot write BOOT"}},
		{name: "no disk expression", mode: configs.ModeMetal, docs: "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\ninstaller:\n  image: " + image + "\n",
			errs: []string{"UnattendedInstallConfig.provisioning.diskSelector.match: provisioning.diskSelector.match is required",
				"UnattendedInstallConfig: either install disk or diskSelector should be defined"}},
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
