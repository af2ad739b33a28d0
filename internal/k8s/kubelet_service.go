package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/k8s/secrets"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/supervisor"
	"github.com/talosbox/talosbox/internal/taskrunner"
)

// KubeletServiceID is the kubelet's service, as Talos names it.
const KubeletServiceID = "kubelet"

// kubelet runs the kubelet service from the latest KubeletSpec: the
// service is loaded with the node's others, waits for a spec, and the
// KubeletServiceController restarts it when the spec changes.
type kubelet struct {
	k    *Kubernetes
	node Node

	// restrictOOM: the node may not lower oom_score_adj (a sandboxed
	// Docker node), so the kubelet keeps its own.
	restrictOOM bool

	mu      sync.Mutex
	running *k8s.KubeletSpecSpec // the spec the current run started with
}

func (kl *kubelet) service() supervisor.Service {
	return supervisor.Service{
		ID:        KubeletServiceID,
		DependsOn: []string{constants.CRIServiceID},
		Conditions: []supervisor.Condition{supervisor.ResourceCondition(kl.node.Store(),
			bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.KubeletSpecType, ID: k8s.KubeletID},
			func(bus.Resource) bool { return true }, "kubelet spec")},
		Runner:          kl,
		RestartInterval: 5 * time.Second,
		Health: &supervisor.HealthCheck{
			Func:          kubeletHealthy,
			InitialDelay:  2 * time.Second,
			StartupPeriod: 500 * time.Millisecond,
			Period:        5 * time.Second,
			Timeout:       2 * time.Second,
		},
	}
}

func (kl *kubelet) String() string { return `Containerd("kubelet")` }

// ReportsStart implements supervisor.StartReporter: the task runner
// reports Running once the task has a PID.
func (kl *kubelet) ReportsStart() {}

// Run implements supervisor.Runner with the spec in effect now.
func (kl *kubelet) Run(ctx context.Context, log io.Writer) error {
	res, err := bus.GetAs[*k8s.KubeletSpec](ctx, kl.node.Store(), bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.KubeletSpecType, ID: k8s.KubeletID})
	if err != nil {
		return fmt.Errorf("kubelet spec: %w", err)
	}

	spec := *res.TypedSpec()

	kl.mu.Lock()
	kl.running = &spec
	kl.mu.Unlock()

	kl.restartOnClientCert(ctx, log)

	rt := kl.node.Runtime()

	mounts, err := kl.mounts(spec)
	if err != nil {
		return err
	}

	runner := taskrunner.New(taskrunner.Options{
		Socket:            rt.CRISocket,
		Namespace:         "system",
		ID:                KubeletServiceID,
		Image:             spec.Image,
		HostsDir:          rt.HostsDir,
		Args:              append([]string{"/usr/local/bin/kubelet"}, spec.Args...),
		Env:               []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Mounts:            mounts,
		CgroupsPath:       "/podruntime/kubelet",
		OOMScoreAdj:       kl.oomScoreAdj(),
		Privileged:        true,
		HostNetwork:       true,
		HostPID:           true,
		RootfsPropagation: "shared",
		NoPivotRoot:       rt.NoPivotRoot,
	})

	return runner.Run(ctx, log)
}

// oomScoreAdj is Talos's -450 where the node may lower it.
func (kl *kubelet) oomScoreAdj() int {
	if kl.restrictOOM {
		return 0
	}

	return -450
}

// changed says whether spec differs from the running kubelet's.
func (kl *kubelet) changed(spec k8s.KubeletSpecSpec) bool {
	kl.mu.Lock()
	defer kl.mu.Unlock()

	return kl.running != nil && !reflect.DeepEqual(*kl.running, spec)
}

// mounts are Talos's kubelet mounts; a source the
// node cannot create (a read-only root in a container) is left out.
func (kl *kubelet) mounts(spec k8s.KubeletSpecSpec) ([]specs.Mount, error) {
	root := kl.k.root()
	rbind := []string{"rbind", "rshared", "rw"}

	type m struct {
		dst, src string
		opts     []string
		file     bool
		optional bool
	}

	list := []m{
		{dst: "/dev", src: "/dev", opts: rbind},
		{dst: "/sys/fs/cgroup", src: "/sys/fs/cgroup", opts: rbind},
		{dst: "/lib/modules", src: "/lib/modules", opts: []string{"bind", "ro"}, optional: true},
		{dst: "/etc/kubernetes", src: "/etc/kubernetes", opts: []string{"bind", "rshared", "rw"}},
		{dst: "/etc/os-release", src: "/etc/os-release", opts: []string{"bind", "ro"}, file: true, optional: true},
		{dst: "/etc/machine-id", src: "/etc/machine-id", opts: []string{"bind", "ro"}, file: true, optional: true},
		{dst: "/etc/hosts", src: "/etc/hosts", opts: []string{"bind", "ro"}, file: true, optional: true},
		{dst: constants.ResolvConfPath, src: constants.ResolvConfPath, opts: []string{"bind", "ro"}, file: true},
		{dst: "/etc/cni", src: "/etc/cni", opts: rbind},
		{dst: "/opt/cni", src: "/opt/cni", opts: rbind, optional: true},
		{dst: "/usr/libexec/kubernetes", src: "/usr/libexec/kubernetes", opts: rbind, optional: true},
		// The default spec's /run is a tmpfs; the CRI socket is on the node's.
		{dst: "/run", src: "/run", opts: rbind},
		{dst: "/var/run", src: "/run", opts: rbind},
		{dst: "/var/lib/containerd", src: "/var/lib/containerd", opts: rbind},
		{dst: "/var/lib/kubelet", src: "/var/lib/kubelet", opts: rbind},
		{dst: "/var/log/containers", src: "/var/log/containers", opts: rbind},
		{dst: "/var/log/pods", src: "/var/log/pods", opts: rbind},
		{dst: "/var/mnt", src: "/var/mnt", opts: []string{"rbind", "rshared", "ro"}, optional: true},
	}

	var out []specs.Mount

	// sysfs read-only first, then the cgroup tree over it.
	out = append(out, specs.Mount{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"ro", "nosuid", "noexec", "nodev"}})

	for _, x := range list {
		src := filepath.Join(root, x.src)

		if err := ensure(src, x.file); err != nil {
			if x.optional {
				continue
			}

			return nil, fmt.Errorf("kubelet mount %s: %w", x.dst, err)
		}

		out = append(out, specs.Mount{Destination: x.dst, Type: "bind", Source: src, Options: x.opts})
	}

	for _, em := range spec.ExtraMounts {
		if em.Type == "bind" || em.Type == "" {
			if err := os.MkdirAll(em.Source, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, fmt.Errorf("machine.kubelet.extraMounts %s: %w", em.Destination, err)
			}
		}

		out = append(out, specs.Mount{Destination: em.Destination, Type: em.Type, Source: em.Source, Options: em.Options})
	}

	return out, nil
}

// ensure makes a mount source exist: a directory, or for a file its
// directory (the file itself must be there).
func ensure(p string, file bool) error {
	if file {
		_, err := os.Stat(p)
		return err
	}

	return os.MkdirAll(p, 0o755)
}

// kubeletHealthy is Talos's check: /healthz on the kubelet's local port.
func kubeletHealthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, constants.KubeletHealthzURL, nil)
	if err != nil {
		return err
	}

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kubelet healthz: %s", resp.Status)
	}

	return nil
}

// kubeletFiles are what the kubelet reads besides its image: its
// configuration, the bootstrap kubeconfig and the accepted CAs.
func kubeletFiles(cfg *configs.Config, spec k8s.KubeletSpecSpec) ([]render.File, error) {
	conf, err := render.KubeletConfigYAML(spec)
	if err != nil {
		return nil, err
	}

	server, err := render.KubeletServer(cfg)
	if err != nil {
		return nil, err
	}

	cas := render.KubeletCAs(cfg)

	boot, err := secrets.BootstrapKubeconfig(server, cas, cfg.Cluster.Token)
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
	}

	return []render.File{
		{Path: constants.KubeletConfigPath, Mode: 0o600, Data: conf},
		{Path: constants.KubeletBootstrapPath, Mode: 0o600, Data: boot},
		{Path: constants.KubeletCAPath, Mode: 0o400, Data: render.KubeletCABundle(cas)},
	}, nil
}
