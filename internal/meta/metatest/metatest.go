// Package metatest writes META partition images for tests of the packages
// that read them (machined, apid).
package metatest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/talosbox/talosbox/internal/meta"
)

// Image writes a 1 MiB META image holding tags to a file in a temporary
// directory and returns its path and bytes.
func Image(t testing.TB, tags map[uint8]string) (string, []byte) {
	t.Helper()

	m, err := meta.New(1 << 20)
	if err != nil {
		t.Fatal(err)
	}

	for tag, v := range tags {
		if _, err := m.SetTag(tag, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}

	img, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}

	p := filepath.Join(t.TempDir(), "meta.img")
	if err := os.WriteFile(p, img, 0o600); err != nil {
		t.Fatal(err)
	}

	return p, img
}
