// Package platform knows where a node runs: "metal" (a real or virtual
// machine, where PID 1 mounts everything itself) or "container" (Docker or
// a test namespace, where the runtime already mounted what is needed and
// the node must stay inside its state dir). It also reads the kernel
// command line and fetches a config named there.
package platform

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Names of the platforms.
const (
	Metal     = "metal"
	Container = "container"
)

// EnvVar forces the platform when --platform is not given.
const EnvVar = "TALOSBOX_PLATFORM"

// EnvOwnRoot=1 says a container node owns its root filesystem: the node
// image cluster create builds sets it. Engine markers (/.dockerenv) do
// not tell, since a test harness may itself run in a container and start
// PID-1 nodes in namespaces over its own filesystem.
const EnvOwnRoot = "TALOSBOX_OWN_ROOT"

// DefaultMetalStateDir is where STATE is mounted on metal, as on Talos.
// Before the node is installed it is a directory of the /system tmpfs,
// and what it holds moves to the disk with the install.
const DefaultMetalStateDir = "/system/state"

// Platform is what the boot sequence needs from where it runs.
type Platform struct {
	Name string
	// StateDir is the STATE directory: the config and node identity.
	StateDir string
	// EphemeralDir is EPHEMERAL: what /var holds on metal. In container
	// mode machine.files land under it, so nothing is written outside the
	// node's own directory.
	EphemeralDir string
	// Root is where absolute system paths (/etc/hostname, /proc/sys) are
	// found: "/" on both platforms.
	Root string
	// OwnRoot says the node owns its root filesystem: metal, or PID 1 of a
	// container whose image says so (EnvOwnRoot: a Docker node); a PID 1
	// in namespaces over the host's filesystem is not one. Kubernetes runs only there, since the
	// kubelet, the CRI and runc must agree on absolute paths; a machined
	// sharing a host's filesystem (tests) keeps everything under its
	// state directory instead.
	OwnRoot bool
}

// IsMetal reports whether the node owns the machine.
func (p Platform) IsMetal() bool { return p.Name == Metal }

// Options pick the platform.
type Options struct {
	Flag     string              // --platform
	StateDir string              // --state-dir (container mode; metal override)
	Getenv   func(string) string // os.Getenv
	PID      int                 // os.Getpid()
	// Exists reports whether a path exists; os.Stat by default. Tests use
	// it to fake container markers.
	Exists func(string) bool
}

// Detect decides the platform: the flag, then $TALOSBOX_PLATFORM, then
// what the process can see. Detection only ever picks metal for PID 1
// outside a container, so a stray `talosbox machined` on a workstation
// refuses to run instead of mounting over the host.
func Detect(opts Options) (Platform, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}

	if opts.Exists == nil {
		opts.Exists = func(p string) bool { _, err := os.Stat(p); return err == nil }
	}

	name := opts.Flag
	if name == "" {
		name = opts.Getenv(EnvVar)
	}

	if name == "" {
		switch {
		case inContainer(opts):
			name = Container
		case opts.PID == 1:
			name = Metal
		default:
			return Platform{}, errors.New("cannot detect the platform: not PID 1 and not in a container; use --platform metal|container")
		}
	}

	switch name {
	case Metal:
		dir := opts.StateDir
		if dir == "" {
			dir = DefaultMetalStateDir
		}

		return Platform{Name: Metal, StateDir: dir, EphemeralDir: "/var", Root: "/", OwnRoot: true}, nil
	case Container:
		base := opts.StateDir
		if base == "" {
			base = "/var/lib/talosbox"
		}

		abs, err := filepath.Abs(base)
		if err != nil {
			return Platform{}, fmt.Errorf("state dir: %w", err)
		}

		return Platform{Name: Container, StateDir: filepath.Join(abs, "state"), EphemeralDir: filepath.Join(abs, "ephemeral"), Root: "/",
			OwnRoot: opts.PID == 1 && opts.Getenv(EnvOwnRoot) == "1"}, nil
	}

	return Platform{}, fmt.Errorf("unknown platform %q: use metal or container", name)
}

func inContainer(opts Options) bool {
	// Docker, podman and systemd-nspawn each leave one of these.
	return opts.Exists("/.dockerenv") || opts.Exists("/run/.containerenv") || opts.Getenv("container") != ""
}
