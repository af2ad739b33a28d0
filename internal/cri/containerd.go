package cri

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// shimName is the binary containerd runs for runtime io.containerd.runc.v2;
// here it is an applet of this binary, linked into Runtime.BinDir.
const shimName = "containerd-shim-runc-v2"

// maxSocketPath is the longest path a unix socket address holds on Linux.
const maxSocketPath = 107

// ContainerdOptions are what the node hands its container runtime.
type ContainerdOptions struct {
	// Runtime is where the two instances keep their files.
	Runtime Runtime
	// Executable is the multicall binary whose containerd applet runs
	// the two containerd instances; this very binary when empty.
	Executable string
	// RuncPath is linked into containerd's PATH as runc; when empty the
	// runc FindRunc finds is used.
	RuncPath string
	// OOMScoreAdjPath is where machined tries to lower its own
	// oom_score_adj to learn whether pods may (/proc/self/oom_score_adj
	// when empty, "-" for a node known not to).
	OOMScoreAdjPath string
	// OnCRILoadError, when set, hears from the CRI service's health check
	// that a CRI plugin did not load (a config containerd decoded but the
	// plugin refused): containerd serves on without a CRI and will not
	// retry, so a boot waiting for the service to be healthy can give up
	// at once. It is called again only when the error changes.
	OnCRILoadError func(error)
}

// Containerd is a node's container runtime: the system and CRI
// containerd services and the CRI config they read. It is one value per
// node because the boot and RegistryController both render the config
// and must not interleave.
type Containerd struct {
	opts ContainerdOptions

	mu sync.Mutex
	// prepared says the boot has laid the runtime out, so a render from
	// the controller finds its directories.
	prepared bool

	// loadErr is the last CRI plugin load error the health check saw.
	loadMu  sync.Mutex
	loadErr error
}

// NewContainerd makes a node's container runtime; nothing is written
// until Services runs.
func NewContainerd(opts ContainerdOptions) *Containerd {
	return &Containerd{opts: opts}
}

// Services are the system containerd and the CRI containerd, both this
// binary's containerd applet. Their configs are rendered first, so a bad
// CRI customisation fails the boot step that names it.
func (c *Containerd) Services(cfg *configs.Config) ([]supervisor.Service, error) {
	exe := c.opts.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("containerd: find this binary: %w", err)
		}
	}

	rt := c.opts.Runtime

	for _, sock := range []string{rt.SystemSocket, rt.CRISocket} {
		// containerd also listens on sock+".ttrpc"; both must fit a unix
		// socket address (108 bytes with the terminating NUL).
		if l := len(sock) + len(".ttrpc"); l > maxSocketPath {
			return nil, fmt.Errorf("containerd: socket path %s is %d bytes with its .ttrpc twin, more than a unix socket allows (%d): use a shorter --state-dir", sock, l, maxSocketPath)
		}
	}

	if err := c.prepare(exe); err != nil {
		return nil, err
	}

	// A new boot's services: what the last boot's CRI did is no news.
	c.loadMu.Lock()
	c.loadErr = nil
	c.loadMu.Unlock()

	if err := c.Render(cfg); err != nil {
		return nil, err
	}

	c.mu.Lock()
	c.prepared = true
	c.mu.Unlock()

	// PID 1 on metal has no PATH of its own.
	path := cmp.Or(os.Getenv("PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	env := append(os.Environ(), "PATH="+rt.BinDir+":"+path, "XDG_RUNTIME_DIR="+filepath.Dir(rt.CRIState))

	svc := func(id, conf, sock string, deps []string, check func(context.Context) error) supervisor.Service {
		return supervisor.Service{
			ID:        id,
			DependsOn: deps,
			// Run through the link named containerd: the binary itself may
			// be /init, which is machined.
			Runner: supervisor.ProcessRunner(supervisor.ProcessOptions{
				Path: filepath.Join(rt.BinDir, "containerd"),
				Args: []string{"--config", conf},
				Env:  env,
			}),
			Health: &supervisor.HealthCheck{
				Func:          check,
				InitialDelay:  50 * time.Millisecond,
				StartupPeriod: 50 * time.Millisecond,
				Period:        5 * time.Second,
			},
		}
	}

	return []supervisor.Service{
		svc(constants.ContainerdServiceID, rt.SystemConfig, rt.SystemSocket, []string{"machined"},
			func(ctx context.Context) error { return containerdServing(ctx, rt.SystemSocket) }),
		svc(constants.CRIServiceID, rt.CRIConfig, rt.CRISocket, []string{"machined"}, c.criHealth),
	}, nil
}

// prepare writes the two instances' own configs and the directory
// containerd finds its shim (and runc, when given) in.
func (c *Containerd) prepare(exe string) error {
	rt := c.opts.Runtime

	for _, d := range []string{rt.BinDir, filepath.Dir(rt.SystemConfig), filepath.Dir(rt.CRIConfig), rt.CRIConfDir, rt.HostsDir, rt.CNIConfDir, rt.PodLogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}

	links := map[string]string{shimName: exe, "containerd": exe}
	if runc := c.runcPath(); runc != "" {
		links["runc"] = runc
	}

	for name, target := range links {
		if err := replaceSymlink(target, filepath.Join(rt.BinDir, name)); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}

	files := []File{
		{Path: rt.SystemConfig, Mode: 0o600, Data: SystemConfig(InstanceOptions{Root: rt.SystemRoot, State: rt.SystemState, Socket: rt.SystemSocket})},
		{Path: rt.CRIConfig, Mode: 0o600, Data: CRIConfig(InstanceOptions{
			Root: rt.CRIRoot, State: rt.CRIState, Socket: rt.CRISocket,
			Imports: []string{filepath.Join(rt.CRIConfDir, "cri.toml")},
		})},
	}

	for _, f := range files {
		if err := writeIfChanged(f.Path, f.Data, f.Mode); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}

	return nil
}

// runcPath is ContainerdOptions.RuncPath, else the runc FindRunc finds.
func (c *Containerd) runcPath() string {
	if c.opts.RuncPath != "" {
		return c.opts.RuncPath
	}

	return FindRunc()
}

// FindRunc is the runc a node finds by itself ("" when it has none): a
// node without it runs no containers, so no kubelet either. Talos's
// /bin/runc is tried after PATH because PID 1 on metal starts without one.
func FindRunc() string {
	if p, err := exec.LookPath("runc"); err == nil {
		return p
	}

	if _, err := os.Stat("/bin/runc"); err == nil {
		return "/bin/runc"
	}

	return ""
}

// Prepared says whether the boot has laid the runtime out.
func (c *Containerd) Prepared() bool {
	c.mu.Lock()
	defer c.mu.Unlock()

	return c.prepared
}
