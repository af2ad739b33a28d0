package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/platform"
)

func TestInstallTarget(t *testing.T) {
	sys := fakeDisks(t, map[string]int64{"vda": 6, "vdb": 2, "sdc": 8})

	install := func(in *configs.InstallConfig) *configs.Config {
		return &configs.Config{Machine: &configs.MachineConfig{Install: in}}
	}

	tests := []struct {
		name    string
		cfg     *configs.Config
		cmdline string
		want    string
		err     string
	}{
		{"config names the disk", install(&configs.InstallConfig{Disk: "/dev/sdc"}), "talosbox.install.disk=/dev/vda", "/dev/sdc", ""},
		{"cmdline when the config names none", install(&configs.InstallConfig{}), "talosbox.install.disk=/dev/sdc", "/dev/sdc", ""},
		{"first virtio disk otherwise", &configs.Config{}, "", "/dev/vda", ""},
		{"gen config's default on a virtio machine", install(&configs.InstallConfig{Disk: "/dev/sda"}), "", "",
			"install disk /dev/sda: no such disk here (disks: /dev/sdc (8.0 GiB), /dev/vda (6.0 GiB), /dev/vdb (2.0 GiB))"},
		{"too small", install(&configs.InstallConfig{Disk: "/dev/vdb"}), "", "",
			"install disk /dev/vdb: plan partitions: the disk (2.0 GiB) is too small"},
		{"disk selector by size", install(&configs.InstallConfig{DiskSelector: &configs.InstallDiskSelector{Size: ">= 7GiB"}}), "", "/dev/sdc", ""},
		{"disk selector wins over the disk", install(&configs.InstallConfig{Disk: "/dev/vda", DiskSelector: &configs.InstallDiskSelector{BusPath: "/virtio*", Size: "< 7GiB"}}),
			"", "/dev/vda", ""},
		{"disk selector matching nothing", install(&configs.InstallConfig{DiskSelector: &configs.InstallDiskSelector{Type: "nvme"}}), "", "",
			`machine.install.diskSelector {type: "nvme"} matches no disk here (disks: /dev/sdc 8.6 GB ssd busPath "/virtio"; `},
		{"disk selector matching a disk too small", install(&configs.InstallConfig{DiskSelector: &configs.InstallDiskSelector{Size: "< 3GiB"}}), "", "",
			"install disk /dev/vdb: plan partitions: the disk (2.0 GiB) is too small"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVolumes(Options{
				Platform: platform.Platform{Name: platform.Metal, StateDir: t.TempDir(), EphemeralDir: t.TempDir(), Root: "/"},
				SysRoot:  sys,
				Cmdline:  func() platform.Cmdline { return platform.ParseCmdline(tt.cmdline) },
			})

			d, err := v.installTarget(tt.cfg)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}

				// A config that cannot install is refused before the node
				// leaves maintenance mode.
				if cerr := v.CheckInstallable(tt.cfg); cerr == nil || cerr.Error() != err.Error() {
					t.Fatalf("CheckInstallable = %v, want %v", cerr, err)
				}

				return
			}

			if err != nil || d.Path != tt.want {
				t.Fatalf("installTarget = %s, %v; want %s", d.Path, err, tt.want)
			}
		})
	}
}

func TestCheckInstallableSkips(t *testing.T) {
	bad := &configs.Config{Machine: &configs.MachineConfig{Install: &configs.InstallConfig{Disk: "/dev/nothing"}}}

	container := NewVolumes(Options{Platform: platform.Platform{Name: platform.Container, StateDir: t.TempDir(), EphemeralDir: t.TempDir(), Root: "/"}})

	if err := container.CheckInstallable(bad); err != nil {
		t.Errorf("container mode checked an install disk: %v", err)
	}

	installed := NewVolumes(Options{Platform: platform.Platform{Name: platform.Metal, StateDir: t.TempDir(), EphemeralDir: t.TempDir(), Root: "/"}})

	installed.sysDisk = "vda"

	if err := installed.CheckInstallable(bad); err != nil {
		t.Errorf("an installed node checked an install disk: %v", err)
	}
}

func TestCopyDirKeepsModes(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()

	files := map[string]os.FileMode{"config.yaml": 0o600, "node-identity.yaml": 0o600, "sub/public.txt": 0o644}

	if err := os.Mkdir(filepath.Join(src, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}

	for name, mode := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(name), mode); err != nil {
			t.Fatal(err)
		}
	}

	if err := copyDir(dst, src); err != nil {
		t.Fatal(err)
	}

	for name, mode := range files {
		st, err := os.Stat(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}

		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, st.Mode().Perm(), mode)
		}

		if data, _ := os.ReadFile(filepath.Join(dst, name)); string(data) != name {
			t.Errorf("%s: content %q", name, data)
		}
	}

	if st, err := os.Stat(filepath.Join(dst, "sub")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("sub: %v %v", st.Mode(), err)
	}
}

// TestSystemLayoutLeavesEncryptedEmpty: the install formats only the
// volumes that are not to be encrypted.
func TestSystemLayoutLeavesEncryptedEmpty(t *testing.T) {
	enc := &configs.EncryptionConfig{Keys: []configs.EncryptionKey{nodeIDKeyCfg(0)}}

	for _, c := range []struct {
		name string
		sde  *configs.SystemDiskEncryption
		want map[string]string
	}{
		{"none", nil, map[string]string{"STATE": "ext4", "EPHEMERAL": "ext4"}},
		{"state", &configs.SystemDiskEncryption{State: enc}, map[string]string{"STATE": "", "EPHEMERAL": "ext4"}},
		{"both", &configs.SystemDiskEncryption{State: enc, Ephemeral: enc}, map[string]string{"STATE": "", "EPHEMERAL": ""}},
	} {
		cfg := &configs.Config{Machine: &configs.MachineConfig{SystemDiskEncryption: c.sde}}

		for _, p := range systemLayout(cfg) {
			if want, ok := c.want[p.Label]; ok && p.FS != want {
				t.Errorf("%s: %s formatted %q, want %q", c.name, p.Label, p.FS, want)
			}
		}
	}

	for _, p := range disk.SystemLayout {
		if (p.Label == disk.LabelState || p.Label == disk.LabelEphemeral) && p.FS != disk.FSExt4 {
			t.Errorf("systemLayout changed disk.SystemLayout itself: %s", p.Label)
		}
	}
}
