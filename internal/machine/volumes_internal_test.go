package machine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/platform"
)

// fakeDisks makes a sysfs with whole disks of the given sizes (GiB).
func fakeDisks(t *testing.T, disks map[string]int64) string {
	t.Helper()

	root := t.TempDir()
	class := filepath.Join(root, "class", "block")

	for name, gib := range disks {
		dir := filepath.Join(root, "devices", "virtio", "block", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}

		files := map[string]string{
			"uevent": fmt.Sprintf("DEVNAME=%s\nDEVTYPE=disk\n", name),
			"size":   fmt.Sprint(gib << 21),
			"ro":     "0", "removable": "0",
		}

		for f, c := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}

		if err := os.MkdirAll(class, 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.Symlink(dir, filepath.Join(class, name)); err != nil {
			t.Fatal(err)
		}
	}

	return root
}

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
			n, err := New(Options{Platform: platform.Platform{Name: platform.Metal, StateDir: t.TempDir(), EphemeralDir: t.TempDir(), Root: "/"}})
			if err != nil {
				t.Fatal(err)
			}

			n.sysRoot, n.cmdline = sys, platform.ParseCmdline(tt.cmdline)

			d, err := n.installTarget(tt.cfg)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}

				// A config that cannot install is refused before the node
				// leaves maintenance mode.
				if cerr := n.checkInstallable(tt.cfg); cerr == nil || cerr.Error() != err.Error() {
					t.Fatalf("checkInstallable = %v, want %v", cerr, err)
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

	container, err := New(Options{Platform: platform.Platform{Name: platform.Container, StateDir: t.TempDir(), EphemeralDir: t.TempDir(), Root: "/"}})
	if err != nil {
		t.Fatal(err)
	}

	if err := container.checkInstallable(bad); err != nil {
		t.Errorf("container mode checked an install disk: %v", err)
	}

	installed, err := New(Options{Platform: platform.Platform{Name: platform.Metal, StateDir: t.TempDir(), EphemeralDir: t.TempDir(), Root: "/"}})
	if err != nil {
		t.Fatal(err)
	}

	installed.sysDisk = "vda"

	if err := installed.checkInstallable(bad); err != nil {
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
	enc := &configs.EncryptionConfig{Keys: []configs.EncryptionKey{{Slot: 0, NodeID: &configs.EncryptionKeyNodeID{}}}}

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
