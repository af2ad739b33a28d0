package talos

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindToolIsAbsolute: ginkgo runs e2e.test in another directory, so a
// relative tool path (make conformance passes _out/bin) would not be found
// there; every way of finding a tool gives an absolute path.
func TestFindToolIsAbsolute(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, "bin", "kubectl"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	t.Chdir(dir)

	// make conformance runs talosctl as _out/bin/talosctl: "beside
	// talosctl" is a relative directory.
	args := os.Args
	os.Args = append([]string{"bin/talosctl"}, args[1:]...)

	t.Cleanup(func() { os.Args = args })

	for _, tc := range []struct{ name, flag string }{
		{"flag", "bin/kubectl"},
		{"beside talosctl", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := findTool(tc.flag, "kubectl")
			if err != nil {
				t.Fatal(err)
			}

			if want := filepath.Join(dir, "bin", "kubectl"); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}

	if _, err := findTool("bin/nothing", "kubectl"); err == nil {
		t.Error("a missing --kubectl-binary was accepted")
	}
}
