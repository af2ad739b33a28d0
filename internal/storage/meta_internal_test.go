package storage

import (
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
)

// The META used is the one beside STATE, whatever other disks hold.
func TestFindMeta(t *testing.T) {
	part := func(d string, n int, label string) disk.BlockDevice {
		name := d + string(rune('0'+n))
		return disk.BlockDevice{Name: name, Path: "/dev/" + name, Disk: d, PartN: n, PartName: label}
	}

	tests := []struct {
		name string
		devs []disk.BlockDevice
		want string
	}{
		{"none", []disk.BlockDevice{{Name: "vda", Path: "/dev/vda"}}, ""},
		{"only one", []disk.BlockDevice{part("vda", 4, "META")}, "/dev/vda4"},
		{"beside STATE", []disk.BlockDevice{part("sda", 1, "META"), part("vdb", 4, "META"), part("vdb", 5, "STATE")}, "/dev/vdb4"},
		{"STATE without META", []disk.BlockDevice{part("sda", 1, "META"), part("vdb", 5, "STATE")}, ""},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := findMeta(tt.devs)
			if got.Path != tt.want || ok != (tt.want != "") {
				t.Fatalf("findMeta = %q %v, want %q", got.Path, ok, tt.want)
			}
		})
	}
}
