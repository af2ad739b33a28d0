package disk_test

import (
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
)

const GiB = 1 << 30

func TestPlan(t *testing.T) {
	type part struct {
		label      string
		start, end uint64
	}

	// 6 GiB = 12582912 sectors; the backup GPT takes the last 33, and
	// EPHEMERAL ends on the last whole MiB before it.
	talos6G := []part{
		{"EFI", 2048, 206847},
		{"BIOS", 206848, 208895},
		{"BOOT", 208896, 4304895},
		{"META", 4304896, 4306943},
		{"STATE", 4306944, 4511743},
		{"EPHEMERAL", 4511744, 12580863},
	}

	tests := []struct {
		name   string
		layout []disk.PartitionSpec
		size   int64
		want   []part
		err    string
	}{
		{name: "talos layout on 6 GiB", layout: disk.SystemLayout, size: 6 * GiB, want: talos6G},
		{name: "talos layout on 2 GiB", layout: disk.SystemLayout, size: 2 * GiB,
			err: "the disk (2.0 GiB) is too small for EFI, BIOS, BOOT, META, STATE, EPHEMERAL: it needs at least 4.2 GiB"},
		{name: "ephemeral under its minimum", layout: disk.SystemLayout, size: 4 * GiB, err: "needs at least 4.2 GiB"},
		{name: "fixed sizes only", size: 2 * GiB,
			layout: []disk.PartitionSpec{{Label: "A", Size: 1 * disk.MiB}, {Label: "B", Size: 10 * disk.MiB}},
			want:   []part{{"A", 2048, 4095}, {"B", 4096, 24575}}},
		{name: "fixed size past the end", size: 64 * disk.MiB,
			layout: []disk.PartitionSpec{{Label: "A", Size: 64 * disk.MiB}}, err: "too small"},
		{name: "rest not last", size: 2 * GiB,
			layout: []disk.PartitionSpec{{Label: "A"}, {Label: "B", Size: disk.MiB}}, err: "only the last partition may take the rest"},
		{name: "size not in MiB", size: 2 * GiB,
			layout: []disk.PartitionSpec{{Label: "A", Size: 1000}}, err: "not a whole number of MiB"},
		{name: "label too long", size: 2 * GiB,
			layout: []disk.PartitionSpec{{Label: strings.Repeat("x", 37)}}, err: "must be 1 to 36 characters"},
		{name: "unknown filesystem", size: 2 * GiB,
			layout: []disk.PartitionSpec{{Label: "A", FS: "btrfs"}}, err: `unsupported filesystem "btrfs"`},
		{name: "tiny disk", layout: disk.SystemLayout, size: 1 * disk.MiB, err: "too small"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := disk.Plan(tt.layout, tt.size)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if len(plan) != len(tt.want) {
				t.Fatalf("got %d partitions, want %d", len(plan), len(tt.want))
			}

			for i, e := range plan {
				w := tt.want[i]
				if e.Label != w.label || e.Start != w.start || e.End != w.end || e.Index != i+1 {
					t.Errorf("partition %d = %s #%d [%d, %d], want %s #%d [%d, %d]", i, e.Label, e.Index, e.Start, e.End, w.label, i+1, w.start, w.end)
				}

				if e.Start%2048 != 0 {
					t.Errorf("%s starts at sector %d, not on a MiB boundary", e.Label, e.Start)
				}

				if e.Size != 0 && uint64(e.Bytes()) != e.Size {
					t.Errorf("%s is %d bytes, want %d", e.Label, e.Bytes(), e.Size)
				}
			}
		})
	}
}

func TestMinDiskSize(t *testing.T) {
	min := disk.MinDiskSize(disk.SystemLayout)

	if _, err := disk.Plan(disk.SystemLayout, min); err != nil {
		t.Fatalf("the minimum (%d bytes) does not fit: %v", min, err)
	}

	if _, err := disk.Plan(disk.SystemLayout, min-2*disk.MiB); err == nil {
		t.Fatalf("2 MiB under the minimum fits")
	}
}
