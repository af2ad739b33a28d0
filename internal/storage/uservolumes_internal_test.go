package storage

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// loopDisk attaches a blank sparse image of size bytes as a loop device
// with partitions, and returns its name (loop3).
func loopDisk(t *testing.T, size int64) string {
	t.Helper()

	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command("losetup", "--find", "--show", "--partscan", img).Output()
	if err != nil {
		t.Fatalf("losetup (this test needs root and util-linux): %v", err)
	}

	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() }) //nolint:errcheck

	return filepath.Base(loop)
}

// only makes the given loop disks the candidates (disk.Disks leaves loop
// devices out).
func only(names ...string) func([]disk.BlockDevice) []disk.BlockDevice {
	return func(devs []disk.BlockDevice) []disk.BlockDevice {
		return slices.DeleteFunc(slices.Clone(devs), func(d disk.BlockDevice) bool { return d.IsPartition() || !slices.Contains(names, d.Name) })
	}
}

func userVolume(name, typ, match, maxSize string) *configs.UserVolumeConfig {
	u := &configs.UserVolumeConfig{Name: name, VolumeType: typ, Filesystem: &configs.UserVolumeFilesystem{Type: "ext4"},
		Mount: &configs.UserVolumeMount{DisableAccessTime: ptr(true)}}
	if match != "" {
		u.Provisioning = &configs.UserVolumeProvisioning{DiskSelector: &configs.DiskMatch{Match: match}, MaxSize: maxSize}
	}

	return u
}

func ptr[T any](v T) *T { return &v }

// TestUserVolumes makes user volumes on real loop devices, as a node's
// boot does: partitions added where the selector points, sized as Talos
// sizes them, formatted and mounted nosuid, nodev and noatime; found
// again by their labels, never made twice; a whole-disk volume; a
// directory; and the volumes that cannot be made, with why.
func TestUserVolumes(t *testing.T) {
	a, b := loopDisk(t, 400*disk.MiB), loopDisk(t, 200*disk.MiB)
	v := NewVolumes(Options{SysRoot: SysRoot, Store: bus.NewStore(bus.StoreOptions{}), Owner: "test", Logf: t.Logf})
	root := t.TempDir()
	ctx := context.Background()

	t.Cleanup(func() { v.UnmountSystem(ctx, &bytes.Buffer{}) }) //nolint:errcheck // best effort

	var log bytes.Buffer

	mount := func(u *configs.UserVolumeConfig, cand ...string) error {
		return v.mountUserVolume(ctx, u, root, only(cand...), &log)
	}

	// The selector picks the bigger disk, by size: 100 MiB of it, then
	// half of what is left.
	sel := `disk.size > 300u * MiB && !system_disk`
	if err := mount(userVolume("data", "", sel, "100MiB"), a, b); err != nil {
		t.Fatal(err)
	}

	if err := mount(userVolume("logs", "", sel, "50%"), a, b); err != nil {
		t.Fatal(err)
	}

	for _, want := range []string{
		"[talos] user volume data: added partition 1 u-data (100 MiB) to /dev/" + a,
		"[talos] user volume data (/dev/" + a + "p1) was empty: formatted it ext4",
		"[talos] mounted user volume data (/dev/" + a + "p1, 100 MiB) at " + root + "/data",
		"[talos] user volume logs: added partition 2 u-logs (149 MiB) to /dev/" + a,
	} {
		if !strings.Contains(log.String(), want+"\n") {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}

	if opts := mountOptions(t, filepath.Join(root, "data")); !strings.Contains(opts, "nosuid") || !strings.Contains(opts, "nodev") || !strings.Contains(opts, "noatime") {
		t.Errorf("data is mounted %q, want nosuid, nodev and noatime", opts)
	}

	st, err := bus.GetAs[*block.VolumeStatus](ctx, v.opts.Store, bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: block.VolumeStatusType, ID: "u-data"})
	if err != nil || st.TypedSpec().Phase != block.PhaseReady || st.TypedSpec().PartitionIndex != 1 || st.TypedSpec().Size != 100*disk.MiB ||
		st.TypedSpec().MountPath != filepath.Join(root, "data") {
		t.Errorf("VolumeStatus u-data: %+v, %v", st, err)
	}

	if err := os.WriteFile(filepath.Join(root, "data", "kept"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The next boot: unmounted, then found by label, not made again.
	if err := v.UnmountSystem(ctx, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}

	log.Reset()

	if err := mount(userVolume("data", "", sel, "100MiB"), a, b); err != nil {
		t.Fatal(err)
	}

	if strings.Contains(log.String(), "added partition") || strings.Contains(log.String(), "formatted") {
		t.Errorf("the volume was made again:\n%s", log.String())
	}

	if _, err := os.Stat(filepath.Join(root, "data", "kept")); err != nil {
		t.Errorf("the volume's file is gone: %v", err)
	}

	// A whole disk, made and then found.
	whole := userVolume("whole", configs.UserVolumeDisk, `disk.dev_path == "/dev/`+b+`"`, "")
	for range 2 {
		if err := mount(whole, a, b); err != nil {
			t.Fatal(err)
		}

		if err := disk.Unmount(filepath.Join(root, "whole")); err != nil {
			t.Fatal(err)
		}
	}

	if got := strings.Count(log.String(), "[talos] user volume whole (/dev/"+b+") was empty: formatted it ext4\n"); got != 1 {
		t.Errorf("the whole disk was formatted %d times:\n%s", got, log.String())
	}

	if err := mount(userVolume("dir", configs.UserVolumeDirectory, "", ""), a, b); err != nil {
		t.Fatal(err)
	}

	if fi, err := os.Stat(filepath.Join(root, "dir")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("directory volume: %v, %v", fi, err)
	}

	// What cannot be made is said, and nothing changes.
	for _, tc := range []struct {
		u    *configs.UserVolumeConfig
		want string
	}{
		{userVolume("none", "", `disk.transport == "nvme"`, "1GiB"), `disk.transport == "nvme" matches no disk here (disks: /dev/` + a + ` (0.4 GiB), /dev/` + b + ` (0.2 GiB))`},
		{
			&configs.UserVolumeConfig{Name: "big", Provisioning: &configs.UserVolumeProvisioning{DiskSelector: &configs.DiskMatch{Match: sel}, MinSize: "1GiB"}},
			`no disk that ` + sel + ` matches has room: /dev/` + a + `: not enough space: 149 MiB free, the volume needs 1.0 GiB`,
		},
		{userVolume("wholeb", configs.UserVolumeDisk, `disk.dev_path == "/dev/`+a+`"`, ""), `no disk that disk.dev_path == "/dev/` + a + `" matches has room: /dev/` + a + `: holds gpt`},
		{userVolume("onwhole", "", `disk.dev_path == "/dev/`+b+`"`, "10MiB"), `no disk that disk.dev_path == "/dev/` + b + `" matches has room: /dev/` + b + ` holds no GPT: it holds ext4`},
	} {
		err := mount(tc.u, a, b)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", tc.u.Name, err, tc.want)
		}

		st, serr := bus.GetAs[*block.VolumeStatus](ctx, v.opts.Store, bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: block.VolumeStatusType, ID: "u-" + tc.u.Name})
		if serr != nil || st.TypedSpec().Phase != block.PhaseFailed || st.TypedSpec().ErrorMessage != tc.want {
			t.Errorf("VolumeStatus u-%s: %+v, %v", tc.u.Name, st, serr)
		}
	}
}
