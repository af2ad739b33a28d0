package machine

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// shimName is the binary containerd runs for runtime io.containerd.runc.v2;
// here it is an applet of this binary, linked into Runtime.BinDir.
const shimName = "containerd-shim-runc-v2"

// runtimeServices are the system containerd and the CRI containerd, both
// this binary's containerd applet. Their configs are rendered first, so a
// bad CRI customisation fails the boot step that names it.
func (n *Node) runtimeServices(cfg *configs.Config) ([]supervisor.Service, error) {
	if n.opts.NoContainerd {
		return nil, nil
	}

	exe := n.opts.ContainerdPath
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("containerd: find this binary: %w", err)
		}
	}

	rt := n.Runtime()

	for _, sock := range []string{rt.SystemSocket, rt.CRISocket} {
		// containerd also listens on sock+".ttrpc"; both must fit a unix
		// socket address (108 bytes with the terminating NUL).
		if l := len(sock) + len(".ttrpc"); l > maxSocketPath {
			return nil, fmt.Errorf("containerd: socket path %s is %d bytes with its .ttrpc twin, more than a unix socket allows (%d): use a shorter --state-dir", sock, l, maxSocketPath)
		}
	}

	if err := n.prepareRuntime(rt, exe); err != nil {
		return nil, err
	}

	if err := n.renderCRI(cfg); err != nil {
		return nil, err
	}

	n.criMu.Lock()
	n.criPrepared = true
	n.criMu.Unlock()

	// PID 1 on metal has no PATH of its own.
	path := cmp.Or(os.Getenv("PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	env := append(os.Environ(), "PATH="+rt.BinDir+":"+path, "XDG_RUNTIME_DIR="+filepath.Dir(rt.CRIState))

	svc := func(id, conf, sock string, deps []string) supervisor.Service {
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
				Func:          func(ctx context.Context) error { return containerdServing(ctx, sock) },
				InitialDelay:  50 * time.Millisecond,
				StartupPeriod: 50 * time.Millisecond,
				Period:        5 * time.Second,
			},
		}
	}

	return []supervisor.Service{
		svc(constants.ContainerdServiceID, rt.SystemConfig, rt.SystemSocket, []string{"machined"}),
		svc(constants.CRIServiceID, rt.CRIConfig, rt.CRISocket, []string{"machined"}),
	}, nil
}

// prepareRuntime writes the two instances' own configs and the directory
// containerd finds its shim (and runc, when given) in.
func (n *Node) prepareRuntime(rt cri.Runtime, exe string) error {
	for _, d := range []string{rt.BinDir, filepath.Dir(rt.SystemConfig), filepath.Dir(rt.CRIConfig), rt.CRIConfDir, rt.HostsDir, rt.CNIConfDir, rt.PodLogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}

	links := map[string]string{shimName: exe, "containerd": exe}
	if runc := n.runcPath(); runc != "" {
		links["runc"] = runc
	}

	for name, target := range links {
		if err := replaceSymlink(target, filepath.Join(rt.BinDir, name)); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}

	files := []cri.File{
		{Path: rt.SystemConfig, Mode: 0o600, Data: cri.SystemConfig(cri.InstanceOptions{Root: rt.SystemRoot, State: rt.SystemState, Socket: rt.SystemSocket})},
		{Path: rt.CRIConfig, Mode: 0o600, Data: cri.CRIConfig(cri.InstanceOptions{
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

// runcPath is Options.RuncPath, else runc on PATH, else Talos's /bin/runc:
// PID 1 on metal starts without a PATH.
func (n *Node) runcPath() string {
	if n.opts.RuncPath != "" {
		return n.opts.RuncPath
	}

	return FindRunc()
}

// FindRunc is the runc a node finds by itself ("" when it has none): a
// node without it runs no containers, so no kubelet either.
func FindRunc() string {
	if p, err := exec.LookPath("runc"); err == nil {
		return p
	}

	if _, err := os.Stat("/bin/runc"); err == nil {
		return "/bin/runc"
	}

	return ""
}

// renderCRI writes what the CRI instance reads from the machine config:
// 00-base.part, 01-registries.part and the registry hosts tree, then merges
// every *.part (20-customization.part included) into cri.toml. The hosts
// tree is read at each pull, so a mirror change takes effect live.
func (n *Node) renderCRI(cfg *configs.Config) error {
	n.criMu.Lock()
	defer n.criMu.Unlock()

	rt := n.Runtime()

	var regs *configs.RegistriesConfig
	if cfg != nil && cfg.Machine != nil {
		regs = cfg.Machine.Registries
	}

	hosts, err := cri.RegistryHosts(regs, rt.HostsDir)
	if err != nil {
		return fmt.Errorf("registry mirrors: %w", err)
	}

	if _, err := cri.SyncTree(rt.HostsDir, hosts); err != nil {
		return fmt.Errorf("registry mirrors: %w", err)
	}

	regPart, err := cri.RegistriesPart(regs, rt.HostsDir)
	if err != nil {
		return fmt.Errorf("registry mirrors: %w", err)
	}

	base := cri.BasePart(cri.BaseOptions{
		RestrictOOMScoreAdj: !n.canLowerOOMScoreAdj(),
		CNIBinDirs:          rt.CNIBinDirs(),
		CNIConfDir:          rt.CNIConfDir,
		SandboxImage:        images.PauseImage().String(),
		NoPivotRoot:         rt.NoPivotRoot,
	})

	for name, data := range map[string][]byte{"00-base.part": base, "01-registries.part": regPart} {
		if err := writeIfChanged(filepath.Join(rt.CRIConfDir, name), data, 0o600); err != nil {
			return fmt.Errorf("cri config: %w", err)
		}
	}

	merged, _, err := cri.MergeParts(rt.CRIConfDir)
	if err != nil {
		return err
	}

	return writeIfChanged(filepath.Join(rt.CRIConfDir, "cri.toml"), merged, 0o600)
}

// runtimePrepared says whether the boot has laid the runtime out.
func (n *Node) runtimePrepared() bool {
	n.criMu.Lock()
	defer n.criMu.Unlock()

	return n.criPrepared
}

// canLowerOOMScoreAdj says whether this node may lower a process's
// oom_score_adj, which runc does for every pod sandbox (-998). Some
// sandboxes (Docker nodes without CAP_SYS_RESOURCE, this project's CI
// machine even for root) forbid it; the CRI then runs with
// restrict_oom_score_adj instead of failing every pod. It is tried on
// machined itself and undone.
func (n *Node) canLowerOOMScoreAdj() bool {
	if n.opts.OOMScoreAdjPath == "-" {
		return false
	}

	p := n.opts.OOMScoreAdjPath
	if p == "" {
		p = "/proc/self/oom_score_adj"
	}

	data, err := os.ReadFile(p)
	if err != nil {
		return false
	}

	cur, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || cur <= -1000 {
		return cur <= -1000 && err == nil
	}

	if err := os.WriteFile(p, []byte(strconv.Itoa(cur-1)), 0o644); err != nil {
		return false
	}

	// Raising it back is always allowed.
	_ = os.WriteFile(p, []byte(strconv.Itoa(cur)), 0o644)

	return true
}

// CanLowerOOMScoreAdj says whether processes the node starts may get a
// negative oom_score_adj (see canLowerOOMScoreAdj).
func (n *Node) CanLowerOOMScoreAdj() bool { return n.canLowerOOMScoreAdj() }

// containerdServing is the health check: containerd's own gRPC health
// service must answer SERVING on its socket.
func containerdServing(ctx context.Context, sock string) error {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()

	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("containerd health: %w", err)
	}

	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("containerd health: %s", res.GetStatus())
	}

	return nil
}

func replaceSymlink(target, link string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}

	tmp := link + ".tmp"
	_ = os.Remove(tmp)

	if err := os.Symlink(target, tmp); err != nil {
		return err
	}

	return os.Rename(tmp, link)
}

// writeIfChanged writes data atomically unless the file already holds it,
// so that an unchanged render touches nothing.
func writeIfChanged(path string, data []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}

	return atomicfile.Write(path, data, mode)
}
