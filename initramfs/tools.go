package initramfs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The u-root release BuildTools builds from. It is not in go.mod: the
// tools are a debugging aid built on demand, not part of talosbox.
const (
	URootModule  = "github.com/u-root/u-root"
	URootVersion = "v0.16.0"
)

// DefaultTools are the u-root core commands --with-tools adds: enough to
// look around a booted node from its console (gosh is the shell).
func DefaultTools() []string {
	return []string{"cat", "cp", "df", "dmesg", "free", "gosh", "grep", "ip", "ls", "lsmod", "mkdir", "mount", "ping", "ps", "rm", "umount", "uname"}
}

var toolName = regexp.MustCompile(`^[a-z0-9_]+$`)

// BuildTools builds the named commands of u-root's cmds/core into dir and
// returns their paths, sorted. It runs `go install PKG@URootVersion`
// outside any module, so the project's go.mod is never touched: static
// (CGO_ENABLED=0), stripped, -trimpath, hence reproducible for one Go
// toolchain. It needs `go` on PATH and the module in the module cache or
// reachable through GOPROXY.
func BuildTools(ctx context.Context, dir string, cmds []string) ([]string, error) {
	if len(cmds) == 0 {
		return nil, nil
	}

	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("build tools: a Go toolchain is needed on PATH: %w", err)
	}

	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("build tools: %w", err)
	}

	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("build tools: %w", err)
	}

	cmds = slices.Sorted(slices.Values(cmds))
	cmds = slices.Compact(cmds)

	args := []string{"install", "-trimpath", "-ldflags=-s -w"}

	for _, c := range cmds {
		if !toolName.MatchString(c) {
			return nil, fmt.Errorf("build tools: invalid command name %q", c)
		}

		args = append(args, URootModule+"/cmds/core/"+c+"@"+URootVersion)
	}

	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = abs
	// GOFLAGS is reset: a -mod=... from the caller's environment is an
	// error for `go install pkg@version`.
	cmd.Env = append(os.Environ(), "GOBIN="+abs, "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")

	var out bytes.Buffer

	cmd.Stdout = &out
	cmd.Stderr = &out

	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("build tools: go %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}

	paths := make([]string, len(cmds))

	for i, c := range cmds {
		paths[i] = filepath.Join(abs, c)
		if !fileExists(paths[i]) {
			return nil, fmt.Errorf("build tools: go install made no %s", paths[i])
		}
	}

	return paths, nil
}
