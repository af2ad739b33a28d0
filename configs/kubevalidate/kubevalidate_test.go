package kubevalidate_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs/kubevalidate"
)

// TestFind: the binary of the version asked for, the newest build when the
// cache keeps several, never a directory or a file that cannot run.
func TestFind(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("TALOSBOX_IMAGE_CACHE", cache)

	put := func(dir string, mode os.FileMode, age time.Duration) string {
		p := filepath.Join(cache, "build", dir, "kubernetes")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(p, []byte("#!/bin/true\n"), mode); err != nil {
			t.Fatal(err)
		}

		when := time.Now().Add(-age)
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}

		return p
	}

	if _, err := kubevalidate.Find("1.34.12"); !errors.Is(err, kubevalidate.ErrNotFound) {
		t.Fatalf("empty cache: %v, want ErrNotFound", err)
	}

	put("kubernetes-v1.34.12-aaaa", 0o755, time.Hour)
	newest := put("kubernetes-v1.34.12-bbbb", 0o755, time.Minute)
	put("kubernetes-v1.34.12-cccc", 0o644, 0) // not executable: a partial copy
	put("kubernetes-v1.33.13-dddd", 0o755, 0)

	if err := os.MkdirAll(filepath.Join(cache, "build", "kubernetes-v1.34.12-eeee", "kubernetes"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, v := range []string{"1.34.12", "v1.34.12"} {
		if got, err := kubevalidate.Find(v); err != nil || got != newest {
			t.Errorf("Find(%s) = %q, %v; want %q", v, got, err, newest)
		}
	}

	if _, err := kubevalidate.Find("1.34.1"); !errors.Is(err, kubevalidate.ErrNotFound) {
		t.Errorf("another patch: %v, want ErrNotFound", err)
	}
}
