package storage

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/resources/config"
)

// docConfig is a config of typed documents, as Decode makes it.
func docConfig(t *testing.T, text string) *configs.Config {
	t.Helper()

	cfg, err := configs.Decode([]byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}

	return cfg
}

// TestInstallTargetFromDocuments: the disk an UnattendedInstallConfig's
// expression picks, evaluated against the machine's disks (the first it
// matches, by name), and EPHEMERAL's minimum size and disk selector from
// its VolumeConfig, as the install reads them.
func TestInstallTargetFromDocuments(t *testing.T) {
	sys := fakeDisks(t, map[string]int64{"vda": 6, "vdb": 5, "sdc": 8})

	attr := func(name, file, content string) {
		t.Helper()

		p := filepath.Join(sys, "devices", "virtio", "block", name, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The transport is the name of the bus device/subsystem links to.
	transport := func(name, bus string) {
		t.Helper()

		dir, dev := filepath.Join(sys, "bus", bus), filepath.Join(sys, "devices", "virtio", "block", name, "device")
		for _, d := range []string{dir, dev} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}

		if err := os.Symlink(dir, filepath.Join(dev, "subsystem")); err != nil {
			t.Fatal(err)
		}
	}

	attr("sdc", "device/model", "Samsung SSD 990")
	transport("sdc", "nvme")
	attr("vda", "device/model", "QEMU HARDDISK")
	transport("vda", "virtio")
	attr("vdb", "serial", "talos-vdb")
	attr("vdb", "queue/rotational", "1")
	transport("vdb", "virtio")

	install := func(match string) string {
		return "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\nprovisioning:\n  diskSelector:\n    match: '" + match + "'\n"
	}

	minSize := func(size string) string {
		return "---\napiVersion: v1alpha1\nkind: VolumeConfig\nname: EPHEMERAL\nprovisioning:\n  minSize: " + size + "\n"
	}

	ephemeralOn := func(match string) string {
		return "---\napiVersion: v1alpha1\nkind: VolumeConfig\nname: EPHEMERAL\nprovisioning:\n  diskSelector:\n    match: '" + match + "'\n"
	}

	const disks = `(disks: /dev/sdc (8.0 GiB, transport "nvme", model "Samsung SSD 990"), /dev/vda (6.0 GiB, transport "virtio", model "QEMU HARDDISK"), ` +
		`/dev/vdb (5.0 GiB, transport "virtio", serial "talos-vdb"))`

	for _, tt := range []struct {
		name, docs, want, err string
	}{
		{"a device path", install(`disk.dev_path == "/dev/vdb"`), "/dev/vdb", ""},
		{"a size", install(`disk.size >= 7u * GiB`), "/dev/sdc", ""},
		{"a model prefix", install(`disk.model.startsWith("Samsung")`), "/dev/sdc", ""},
		{"a transport", install(`disk.transport == "virtio"`), "/dev/vda", ""},
		{"either of two", install(`disk.serial == "talos-vdb" || disk.model == "QEMU HARDDISK"`), "/dev/vda", ""},
		{"not rotational, not NVMe", install(`!disk.rotational && disk.transport != "nvme"`), "/dev/vda", ""},
		{"rotational", install(`disk.rotational`), "/dev/vdb", ""},
		{"in a list, sized", install(`disk.transport in ["virtio", "sata"] && disk.size < 6u * GiB`), "/dev/vdb", ""},
		{"no disk is the system disk before the install", install(`!system_disk`), "/dev/sdc", ""},
		{"a size and a model that no disk has together", install(`disk.size < 7u * GiB && disk.model.startsWith("Samsung")`), "",
			`UnattendedInstallConfig's provisioning.diskSelector.match: disk.size < 7u * GiB && disk.model.startsWith("Samsung") matches no disk here ` + disks},
		{"an error evaluating", install(`disk.size * 10000000000u > 1u`), "",
			`UnattendedInstallConfig's provisioning.diskSelector.match: disk.size * 10000000000u > 1u: uint overflow`},
		{"EPHEMERAL's minimum size met", install(`disk.dev_path == "/dev/vda"`) + minSize("3GiB"), "/dev/vda", ""},
		{"EPHEMERAL's minimum size too big for the disk", install(`disk.dev_path == "/dev/vda"`) + minSize("5GiB"), "",
			"install disk /dev/vda: plan partitions: the disk (6.0 GiB) is too small for EFI, BIOS, BOOT, META, STATE, EPHEMERAL: it needs at least 7.2 GiB"},
		{"EPHEMERAL's selector matching the install disk, the system disk once installed", install(`disk.transport == "nvme"`) +
			ephemeralOn(`system_disk && !disk.rotational`), "/dev/sdc", ""},
		{"EPHEMERAL's selector not matching the install disk", install(`disk.dev_path == "/dev/vda"`) + ephemeralOn(`disk.transport == "nvme"`), "",
			`install disk /dev/vda (6.0 GiB, transport "virtio", model "QEMU HARDDISK"): VolumeConfig "EPHEMERAL" provisioning.diskSelector.match ` +
				`disk.transport == "nvme" does not match it, and talosbox makes EPHEMERAL on the system disk`},
		{"EPHEMERAL's selector and a v1alpha1 install disk", "version: v1alpha1\nmachine:\n  install:\n    disk: /dev/vdb\n" + ephemeralOn(`!disk.rotational`), "",
			`install disk /dev/vdb (5.0 GiB, transport "virtio", serial "talos-vdb"): VolumeConfig "EPHEMERAL" provisioning.diskSelector.match !disk.rotational does not match it`},
		{"a v1alpha1 disk selector, as before", "version: v1alpha1\nmachine:\n  install:\n    diskSelector:\n      model: QEMU*\n" + ephemeralOn(`!disk.rotational`),
			"/dev/vda", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVolumes(Options{
				Platform: platform.Platform{Name: platform.Metal, StateDir: t.TempDir(), EphemeralDir: t.TempDir(), Root: "/"},
				SysRoot:  sys,
				// Consulted only when the config chooses no disk.
				Cmdline: func() platform.Cmdline { return platform.ParseCmdline("talosbox.install.disk=/dev/vdb") },
			})

			cfg := docConfig(t, tt.docs)
			d, err := v.installTarget(cfg)

			switch {
			case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
				t.Fatalf("err = %v, want %q", err, tt.err)
			case tt.err == "" && (err != nil || d.Path != tt.want):
				t.Fatalf("installTarget = %s, %v; want %s", d.Path, err, tt.want)
			case tt.err != "":
				// Refused before the node leaves maintenance mode.
				if cerr := v.CheckInstallable(cfg); cerr == nil || cerr.Error() != err.Error() {
					t.Fatalf("CheckInstallable = %v, want %v", cerr, err)
				}
			}
		})
	}
}

// TestEphemeralFlags: EPHEMERAL is mounted nosuid, nodev and noatime
// unless its VolumeConfig's mount section says otherwise; mounted for
// real, the kernel shows those options.
func TestEphemeralFlags(t *testing.T) {
	volume := func(mount string) string {
		return "apiVersion: v1alpha1\nkind: VolumeConfig\nname: EPHEMERAL\nmount: " + mount + "\n"
	}

	for _, tt := range []struct {
		name, docs string
		want       []string
		notWant    []string
	}{
		{"no document", "", []string{"nosuid", "nodev", "noatime"}, nil},
		{"secure, as gen config writes it", volume("{secure: true}"), []string{"nosuid", "nodev", "noatime"}, nil},
		{"not secure", volume("{secure: false}"), []string{"noatime"}, []string{"nosuid", "nodev"}},
		{"access times", volume("{disableAccessTime: false}"), []string{"nosuid", "nodev", "relatime"}, []string{"noatime"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &configs.Config{}
			if tt.docs != "" {
				cfg = docConfig(t, tt.docs)
			}

			mnt := t.TempDir()
			if err := unix.Mount("tmpfs", mnt, "tmpfs", ephemeralFlags(cfg), ""); err != nil {
				t.Fatal(err)
			}

			t.Cleanup(func() { unix.Unmount(mnt, 0) }) //nolint:errcheck

			opts := mountOptions(t, mnt)

			for _, o := range tt.want {
				if !strings.Contains(","+opts+",", ","+o+",") {
					t.Errorf("mounted %s, want %s", opts, o)
				}
			}

			for _, o := range tt.notWant {
				if strings.Contains(","+opts+",", ","+o+",") {
					t.Errorf("mounted %s, want no %s", opts, o)
				}
			}
		})
	}
}

// mountOptions are the per-mount options /proc/self/mountinfo shows for
// the mount at dir.
func mountOptions(t *testing.T, dir string) string {
	t.Helper()

	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}

	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == dir {
			return f[5]
		}
	}

	t.Fatalf("%s is not in mountinfo", dir)

	return ""
}

func nodeA() (string, error) { return "node-a", nil }

// TestTrimDue: a volume's trims fall once per interval, on slots that
// depend on the node and the volume; the slot due when the schedule is
// first seen is skipped, as after a reboot, and so is the first after a
// change of interval.
func TestTrimDue(t *testing.T) {
	trimEvery := func(interval string) *configs.Config {
		return docConfig(t, "apiVersion: v1alpha1\nkind: FilesystemTrimConfig\ninterval: "+interval+"\n")
	}

	c := &TrimController{NodeID: nodeA}
	week := trimEvery("168h")

	anchor := time.Unix(0, int64(scheduleOffset("node-a/EPHEMERAL", 168*time.Hour)))
	slot := slotBefore(anchor, 168*time.Hour, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))

	if other := scheduleOffset("node-b/EPHEMERAL", 168*time.Hour); other == scheduleOffset("node-a/EPHEMERAL", 168*time.Hour) {
		t.Errorf("two nodes trim at the same moment of the week (%s)", other)
	}

	for i, step := range []struct {
		cfg  *configs.Config
		at   time.Time
		due  bool
		next time.Time
	}{
		{week, slot.Add(time.Hour), false, slot.Add(168 * time.Hour)},                        // first seen
		{week, slot.Add(100 * time.Hour), false, slot.Add(168 * time.Hour)},                  // same slot
		{week, slot.Add(168 * time.Hour), true, slot.Add(2 * 168 * time.Hour)},               // the next slot
		{week, slot.Add(168*time.Hour + time.Minute), false, slot.Add(2 * 168 * time.Hour)},  // handled
		{week, slot.Add(3*168*time.Hour + time.Minute), true, slot.Add(4 * 168 * time.Hour)}, // slots missed: one trim
		{&configs.Config{}, slot.Add(5 * 168 * time.Hour), false, time.Time{}},               // no schedule
		{week, slot.Add(6 * 168 * time.Hour), false, slot.Add(7 * 168 * time.Hour)},          // seen again: skipped
	} {
		due, next := c.due(step.cfg, step.at)

		if (len(due) == 1 && due[0] == disk.LabelEphemeral) != step.due || len(due) > 1 {
			t.Errorf("step %d: due %v, want EPHEMERAL due: %t", i, due, step.due)
		}

		if !next.Equal(step.next) {
			t.Errorf("step %d: next %s, want %s", i, next, step.next)
		}
	}

	// A new interval is a new schedule: its first slot is skipped too.
	c = &TrimController{NodeID: nodeA}
	day := trimEvery("24h")
	dayAnchor := time.Unix(0, int64(scheduleOffset("node-a/EPHEMERAL", 24*time.Hour)))
	daySlot := slotBefore(dayAnchor, 24*time.Hour, slot.Add(200*time.Hour))

	c.due(week, slot.Add(time.Hour))

	if due, _ := c.due(day, daySlot.Add(time.Minute)); len(due) != 0 {
		t.Errorf("the first slot of a new interval is due: %v", due)
	}

	if due, _ := c.due(day, daySlot.Add(24*time.Hour)); len(due) != 1 {
		t.Errorf("the second slot of a new interval is not due: %v", due)
	}
}

// TestTrimController runs the controller on a node whose EPHEMERAL is an
// ext4 filesystem on a loop device, trimmed every second: a file written
// and deleted there leaves its blocks allocated in the loop device's
// image until the controller trims, which gives them back.
func TestTrimController(t *testing.T) {
	img, mnt := loopExt4(t)

	v := NewVolumes(Options{Platform: platform.Platform{Name: platform.Metal, StateDir: t.TempDir(), EphemeralDir: mnt, Root: "/"}})
	v.mounts = []string{mnt}

	store := bus.NewStore(bus.StoreOptions{})
	rt := bus.NewRuntime(store, bus.RuntimeOptions{})

	if err := rt.Register(&TrimController{Volumes: v, NodeID: nodeA}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)

	go func() { done <- rt.Run(ctx) }()

	t.Cleanup(func() { cancel(); <-done })

	const size = 64 * disk.MiB

	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(mnt, "data"), data, 0o600); err != nil {
		t.Fatal(err)
	}

	syscall.Sync()

	written := allocated(t, img)

	if err := os.Remove(filepath.Join(mnt, "data")); err != nil {
		t.Fatal(err)
	}

	syscall.Sync()

	cfg := docConfig(t, "apiVersion: v1alpha1\nkind: FilesystemTrimConfig\ninterval: 1s\n")
	mc := bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg})

	if _, err := store.Modify(ctx, mc, func(res bus.Resource) error {
		res.(*config.MachineConfig).TypedSpec().Config = cfg //nolint:forcetypeassert
		return nil
	}, bus.WithOwner("machined")); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(30 * time.Second)

	for allocated(t, img) > written-size*9/10 {
		if time.Now().After(deadline) {
			t.Fatalf("the image still holds %d bytes (%d with the file): no trim", allocated(t, img), written)
		}

		time.Sleep(50 * time.Millisecond)
	}
}

// loopExt4 is an ext4 filesystem on a loop device over a sparse image,
// mounted without the discard option; it is undone with the test.
func loopExt4(t *testing.T) (img, mnt string) {
	t.Helper()

	if os.Geteuid() != 0 {
		t.Fatal("loop devices need root")
	}

	img = filepath.Join(t.TempDir(), "ephemeral.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	if err := os.Truncate(img, 256*disk.MiB); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 (Debian: apt-get install e2fsprogs): %v: %s", err, out)
	}

	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Fatalf("losetup: %v", err)
	}

	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() }) //nolint:errcheck

	mnt = t.TempDir()
	if err := disk.Mount(loop, mnt, ephemeralMountFlags); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { disk.Unmount(mnt) }) //nolint:errcheck

	return img, mnt
}

// allocated is how much of the sparse image holds data.
func allocated(t *testing.T, img string) int64 {
	t.Helper()

	var st syscall.Stat_t
	if err := syscall.Stat(img, &st); err != nil {
		t.Fatal(err)
	}

	return st.Blocks * 512
}
