// Package version holds the build identity stamped into the binary by the
// linker (see the Makefile's -ldflags), so every applet reports the same one.
package version

import (
	"fmt"
	"runtime"
)

// Stamped at build time with -X; the defaults mark an unstamped `go build`.
var (
	Tag    = "v0.0.0-dev"
	Commit = "unknown"
	Date   = "unknown"
)

// BrokenBoot, when stamped non-empty (make build BROKEN_BOOT=1), makes
// every boot of this build fail fatally after the install: a broken
// release for the tests of the automatic rollback. Never set in a release.
var BrokenBoot = ""

// Short is the one-line form used by `talosbox --version` and `APPLET --version`.
func Short(name string) string {
	return fmt.Sprintf("%s %s (commit %s, built %s, %s %s/%s)",
		name, Tag, Commit, Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Block is the indented form talosctl prints under "Client:" and "Server:".
func Block() string {
	return fmt.Sprintf("\tTag:         %s\n\tSHA:         %s\n\tBuilt:       %s\n\tGo version:  %s\n\tOS/Arch:     %s/%s\n",
		Tag, Commit, Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
