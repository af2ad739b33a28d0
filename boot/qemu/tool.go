package qemu

import (
	"fmt"
	"os"
	"os/exec"
)

// tool is a program this package runs: a Debian package's binary on
// PATH, or what an environment variable names instead.
type tool struct{ env, name, pkg string }

var (
	qemuTool   = tool{BinaryEnv, "qemu-system-x86_64", "qemu-system-x86"}
	switchTool = tool{SwitchBinaryEnv, "vde_switch", "vde-switch"}
)

func (t tool) path() string {
	if b := os.Getenv(t.env); b != "" {
		return b
	}

	return t.name
}

// available reports why the tool cannot be run, or nil.
func (t tool) available() error {
	if _, err := exec.LookPath(t.path()); err != nil {
		return fmt.Errorf("%s not found (Debian: apt-get install --no-install-recommends %s): %w", t.path(), t.pkg, err)
	}

	return nil
}

func binary() string { return qemuTool.path() }

// Binary is the qemu-system-x86_64 the harness runs.
func Binary() string       { return binary() }
func switchBinary() string { return switchTool.path() }

// Available reports why QEMU cannot be started, or nil.
func Available() error { return qemuTool.available() }

// SwitchAvailable reports why a Switch cannot be started, or nil.
func SwitchAvailable() error { return switchTool.available() }
