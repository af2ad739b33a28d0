package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
