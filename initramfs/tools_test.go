package initramfs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeGo puts a `go` on PATH that records its arguments and environment
// and "installs" each package as an empty file in GOBIN, so BuildTools's
// command line is checked without a toolchain run or the network.
func fakeGo(t *testing.T) (log string) {
	t.Helper()

	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	script := `#!/bin/sh
echo "args $*" >> ` + log + `
echo "env GOBIN=$GOBIN CGO_ENABLED=$CGO_ENABLED GOFLAGS=$GOFLAGS GOWORK=$GOWORK" >> ` + log + `
[ -n "$FAKE_GO_FAIL" ] && { echo "go: module lookup disabled" >&2; exit 1; }
for a in "$@"; do
  case $a in *@*) p=${a%@*}; : > "$GOBIN/${p##*/}" ;; esac
done
`

	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOFLAGS", "-mod=vendor")

	return log
}

func TestBuildTools(t *testing.T) {
	log := fakeGo(t)
	out := filepath.Join(t.TempDir(), "tools")

	paths, err := BuildTools(context.Background(), out, []string{"ls", "gosh", "ls"})
	if err != nil {
		t.Fatal(err)
	}

	if want := []string{filepath.Join(out, "gosh"), filepath.Join(out, "ls")}; !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}

	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}

	got := string(b)
	for _, want := range []string{
		"args install -trimpath -ldflags=-s -w " + URootModule + "/cmds/core/gosh@" + URootVersion + " " + URootModule + "/cmds/core/ls@" + URootVersion + "\n",
		"env GOBIN=" + out + " CGO_ENABLED=0 GOFLAGS= GOWORK=off\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("go ran as\n%s\nwant a line %q", got, want)
		}
	}
}

func TestBuildToolsErrors(t *testing.T) {
	fakeGo(t)

	if _, err := BuildTools(context.Background(), t.TempDir(), []string{"../../evil"}); err == nil || !strings.Contains(err.Error(), "invalid command name") {
		t.Errorf("error %v", err)
	}

	t.Setenv("FAKE_GO_FAIL", "1")

	if _, err := BuildTools(context.Background(), t.TempDir(), []string{"ls"}); err == nil || !strings.Contains(err.Error(), "module lookup disabled") {
		t.Errorf("error %v, want go's own message", err)
	}

	t.Setenv("PATH", t.TempDir())

	if _, err := BuildTools(context.Background(), t.TempDir(), []string{"ls"}); err == nil || !strings.Contains(err.Error(), "Go toolchain") {
		t.Errorf("error %v", err)
	}
}
