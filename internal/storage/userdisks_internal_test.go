package storage

import (
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/disk"
)

func TestUserLayout(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts []configs.DiskPartition
		want  []disk.PartitionSpec
		err   string
	}{
		{"sizes round up to a MiB, the last takes the rest", []configs.DiskPartition{{Size: "100 GB", MountPoint: "/var/mnt/a"}, {Size: "1.5MB", MountPoint: "/var/mnt/b"}, {MountPoint: "/var/mnt/c"}},
			[]disk.PartitionSpec{
				{Label: "u-var-mnt-a", Type: disk.TypeLinuxData, Size: 95368 * disk.MiB, FS: disk.FSExt4},
				{Label: "u-var-mnt-b", Type: disk.TypeLinuxData, Size: 2 * disk.MiB, FS: disk.FSExt4},
				{Label: "u-var-mnt-c", Type: disk.TypeLinuxData, FS: disk.FSExt4},
			}, ""},
		{"a long mountpoint is cut to a GPT name", []configs.DiskPartition{{MountPoint: "/var/mnt/" + strings.Repeat("x", 40)}},
			[]disk.PartitionSpec{{Label: "u-var-mnt-" + strings.Repeat("x", 26), Type: disk.TypeLinuxData, FS: disk.FSExt4}}, ""},
		{"bad size", []configs.DiskPartition{{Size: "lots", MountPoint: "/var/mnt/a"}}, nil, `partition 1: invalid size "lots"`},
		{"no partitions", nil, nil, "no partitions"},
	} {
		got, err := userLayout(configs.MachineDisk{Device: "/dev/vdb", Partitions: c.parts})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}

			continue
		}

		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}

		if len(got) != len(c.want) {
			t.Fatalf("%s: %+v", c.name, got)
		}

		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: partition %d %+v, want %+v", c.name, i+1, got[i], c.want[i])
			}
		}
	}
}
