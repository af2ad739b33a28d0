package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/initramfs"
)

// buildBinary builds the real binary through the Makefile, so the test
// covers the flags users and CI build with.
func buildBinary(t testing.TB) string {
	t.Helper()

	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is required (scripts/install-deps.sh installs it)")
	}

	out := filepath.Join(t.TempDir(), "talosbox")
	cmd := exec.Command("make", "-s", "build", "OUT="+out, "VERSION=v9.8.7-test", "COMMIT=abc123", "DATE=2026-01-02T03:04:05Z")
	cmd.Stderr = os.Stderr

	if err := cmd.Run(); err != nil {
		t.Fatalf("make build: %v", err)
	}

	return out
}

func TestBuildIsStaticAndStamped(t *testing.T) {
	bin := buildBinary(t)

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary has an ELF interpreter: it is dynamically linked")
		}
	}

	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Fatalf("imported libraries %v (%v), want none", libs, err)
	}

	out := runBinary(t, bin, 0, "--version")
	if !strings.HasPrefix(out, "talosbox v9.8.7-test (commit abc123, built 2026-01-02T03:04:05Z, go") {
		t.Fatalf("--version = %q", out)
	}
}

func TestDispatchThroughSymlinks(t *testing.T) {
	bin := buildBinary(t)
	links := filepath.Join(t.TempDir(), "bin")

	runBinary(t, bin, 0, "--install", links)

	tests := []struct {
		argv []string
		code int
		want string
	}{
		{[]string{"talosctl", "version", "--client"}, 0, "Client:\n\tTag:         v9.8.7-test\n\tSHA:         abc123\n\tBuilt:       2026-01-02T03:04:05Z\n"},
		{[]string{"init", "--version"}, 0, "machined v9.8.7-test"},
		{[]string{"apid", "--help"}, 0, "Usage: apid --state-dir DIR"},
		{[]string{"apid"}, 2, "apid: --state-dir DIR is required"},
		{[]string{"etcd", "--version"}, 0, "etcd v9.8.7-test"},
	}

	for _, tt := range tests {
		out := runBinary(t, filepath.Join(links, tt.argv[0]), tt.code, tt.argv[1:]...)
		if !strings.Contains(out, tt.want) {
			t.Errorf("%v: output %q does not contain %q", tt.argv, out, tt.want)
		}
	}

	// A link with a name no applet answers to.
	stray := filepath.Join(links, "kubelet")
	if err := os.Symlink(bin, stray); err != nil {
		t.Fatal(err)
	}

	if out := runBinary(t, stray, 127); !strings.Contains(out, "talosbox: applet not found: kubelet") {
		t.Errorf("unknown argv[0]: %q", out)
	}
}

// runBinary runs the binary and checks its exit status; it returns stdout
// and stderr together.
func runBinary(t *testing.T, path string, wantCode int, args ...string) string {
	t.Helper()

	var out bytes.Buffer

	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = &out, &out

	err := cmd.Run()

	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", path, args, err)
	}

	if code != wantCode {
		t.Fatalf("%s %v exited %d, want %d:\n%s", path, args, code, wantCode, out.String())
	}

	return out.String()
}

// The initramfs links every applet name it carries to /init; each must be
// one the multicall answers to, or the node would boot a dead link.
func TestInitramfsLinksAreApplets(t *testing.T) {
	m := multicall()

	for _, link := range initramfs.DefaultLinks() {
		if _, ok := m.Lookup(path.Base(link)); !ok {
			t.Errorf("initramfs link %s names no applet", link)
		}
	}
}
