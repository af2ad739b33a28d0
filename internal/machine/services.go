package machine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/cri"
	hwctrl "github.com/talosbox/talosbox/internal/hardware"
	"github.com/talosbox/talosbox/internal/kmsglog"
	"github.com/talosbox/talosbox/internal/network"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/storage"
	"github.com/talosbox/talosbox/internal/supervisor"
	"github.com/talosbox/talosbox/internal/timed"
	"github.com/talosbox/talosbox/internal/watchdog"
)

// startEarlyServices makes a fresh supervisor for this boot and starts
// what runs before there is a config: machined itself, as Talos's
// earlyServices phase does, so status and maintenance mode are served.
func (n *Node) startEarlyServices(ctx context.Context, _ io.Writer) error {
	sup := supervisor.New(supervisor.Options{
		Store:       n.store,
		Console:     n.console,
		StopTimeout: n.opts.StopTimeout,
		OnEvent: func(id string, ev supervisor.Event) {
			n.emit(Event{
				Type:    "machine.ServiceStateEvent",
				Message: ev.Message,
				Fields:  map[string]string{"service": id, "state": ev.State.String()},
			})

			// The supervisor's restart after a failed run.
			if ev.State == supervisor.Waiting && strings.HasPrefix(ev.Message, "Error running") {
				n.bootNotify(bootNotice{id: id})
			}
		},
	})

	n.mu.Lock()
	n.sup = sup
	n.mu.Unlock()

	early := []supervisor.Service{n.machinedService()}
	if n.opts.EarlyServices != nil {
		early = append(early, n.opts.EarlyServices(n)...)
	}

	if err := sup.Load(early...); err != nil {
		return err
	}

	ids := make([]string, len(early))
	for i, svc := range early {
		ids[i] = svc.ID

		if err := sup.Start(svc.ID); err != nil {
			return err
		}
	}

	return sup.WaitUp(ctx, ids...)
}

// startServices loads the services that need the config, starts them and
// waits until every service is up, finished or skipped.
func (n *Node) startServices(ctx context.Context, cfg *configs.Config, w io.Writer) error {
	sup := n.Supervisor()

	svcs := []supervisor.Service{n.timedService(cfg)}

	if !n.opts.NoContainerd {
		rts, err := n.containerd.Services(cfg)
		if err != nil {
			return err
		}

		svcs = append(svcs, rts...)
	}

	if reg, ok := cri.Registryd(n.opts.ImageCacheDir); ok {
		svcs = append(svcs, reg)
	}

	if dns, ok := n.hostDNSService(cfg); ok {
		svcs = append(svcs, dns)
	}

	if n.opts.Services != nil {
		svcs = append(svcs, n.opts.Services(n, cfg)...)
	}

	if err := sup.Load(svcs...); err != nil {
		return err
	}

	for _, svc := range svcs {
		if err := sup.Start(svc.ID); err != nil {
			return err
		}
	}

	// etcd is not waited for: a control plane that waits for its cluster
	// to be bootstrapped (or to join) must still finish booting, so that
	// `talosctl bootstrap` and health reach it; health checks etcd itself.
	// Nor is the kubelet, which waits for the node's name and addresses
	// and pulls its image: health checks it too.
	var ids []string

	for _, st := range sup.List() {
		if st.ID != "etcd" && st.ID != "kubelet" {
			ids = append(ids, st.ID)
		}
	}

	fmt.Fprintf(w, "[talos] waiting for %d service(s) to be up\n", len(ids))

	return n.waitServicesUp(ctx, sup, ids)
}

// bootServiceFailures is how many failed runs of one service fail the
// boot: a service restarted forever that keeps refusing its config would
// otherwise hold the boot at startAllServices for good, where no fallback
// can reach it. With the supervisor's backoff (5 s, doubling) that is
// about 15 s of a service failing.
const bootServiceFailures = 3

// waitServicesUp waits until the services in ids are up, or fails when
// one fails (Failed, as WaitUp says) or keeps failing and restarting.
func (n *Node) waitServicesUp(ctx context.Context, sup *supervisor.Supervisor, ids []string) error {
	failures := make(chan bootNotice, 16)

	n.mu.Lock()
	n.bootWatch = failures
	n.mu.Unlock()

	// Heard before the watch began.
	if !n.opts.NoContainerd {
		if err := n.containerd.CRILoadError(); err != nil {
			failures <- bootNotice{id: constants.CRIServiceID, err: err}
		}
	}

	defer func() {
		n.mu.Lock()
		n.bootWatch = nil
		n.mu.Unlock()
	}()

	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	go func() {
		counts := map[string]int{}

		for {
			select {
			case <-wctx.Done():
				return
			case ev := <-failures:
				if !slices.Contains(ids, ev.id) {
					continue
				}

				// A service that will not recover (the CRI without its
				// plugins) fails the boot at once.
				if ev.err != nil {
					cancel(fmt.Errorf("service %q is unhealthy and will not recover: %w", ev.id, ev.err))

					return
				}

				if counts[ev.id]++; counts[ev.id] >= bootServiceFailures {
					msg := ""
					if st, ok := sup.Status(ev.id); ok && len(st.Events) > 0 {
						msg = ": " + st.Events[len(st.Events)-1].Message
					}

					cancel(fmt.Errorf("service %q failed %d times while the node booted%s", ev.id, counts[ev.id], msg))

					return
				}
			}
		}
	}()

	err := sup.WaitUp(wctx, ids...)
	if cause := context.Cause(wctx); err != nil && ctx.Err() == nil && cause != nil {
		return cause
	}

	return err
}

// bootNotice is what a boot waiting for its services hears: a service's
// failed run, or (err) a service that will not become healthy.
type bootNotice struct {
	id  string
	err error
}

// bootNotify hands a notice to a boot waiting for the services; it never
// blocks the supervisor.
func (n *Node) bootNotify(ev bootNotice) {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.bootWatch == nil {
		return
	}

	select {
	case n.bootWatch <- ev:
	default:
	}
}

// machinedService runs the node's controllers on the bus.
func (n *Node) machinedService() supervisor.Service {
	return supervisor.Service{
		ID: "machined",
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, _ io.Writer) error {
			rt := bus.NewRuntime(n.store, bus.RuntimeOptions{Logger: n.slogger()})
			for _, c := range []bus.Controller{&MachineStatusController{}, &MachineTypeController{}, &NodeIdentityController{Identity: n.state.Identity},
				&storage.BlockController{SysRoot: n.sysRoot}, &storage.TrimController{Volumes: n.volumes, NodeID: n.state.Identity}, &ExtensionStatusController{}, &SecurityStateController{}, &RootSecretsController{},
				&hwctrl.SystemInfoController{SysRoot: n.sysRoot}, &kmsglog.Controller{}, &watchdog.Controller{}} {
				if err := rt.Register(c); err != nil {
					return err
				}
			}

			if !n.opts.NoContainerd {
				if err := rt.Register(&cri.RegistryController{Containerd: n.containerd}); err != nil {
					return err
				}
			}

			if n.opts.Controllers != nil {
				for _, c := range n.opts.Controllers(n) {
					if err := rt.Register(c); err != nil {
						return err
					}
				}
			}

			if n.opts.Networkd {
				opts, err := n.networkOptions()
				if err != nil {
					return err
				}

				if err := network.Register(rt, opts); err != nil {
					return fmt.Errorf("networkd: %w", err)
				}
			}

			n.controllers.Store(rt)

			return rt.Run(ctx)
		}),
	}
}

// networkOptions says how networkd manages this node: the kernel's
// hostname and /etc on metal; in container mode only the node's own files.
func (n *Node) networkOptions() (network.Options, error) {
	id, err := n.state.Identity()
	if err != nil {
		return network.Options{}, err
	}

	opts := network.Options{NodeID: id, Operators: network.DHCP4Operators}
	if extra := n.opts.Operators; extra != nil {
		opts.Operators = func(spec networkres.OperatorSpecSpec, env network.OperatorEnv) (network.Operator, error) {
			if op, err := network.DHCP4Operators(spec, env); op != nil || err != nil {
				return op, err
			}

			return extra(spec, env)
		}
	}

	if n.opts.Platform.IsMetal() {
		if c, err := os.ReadFile("/proc/cmdline"); err == nil {
			opts.KernelCmdline = string(c)
		}

		opts.Hostname, opts.EtcDir = network.KernelHostname{}, "/etc"
		opts.DefaultDHCP = true

		if n.isNoCloud() {
			n.nocloudNetwork(&opts)
		}

		return opts, nil
	}

	etc := filepath.Join(filepath.Dir(n.opts.Platform.StateDir), "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return network.Options{}, err
	}

	opts.Hostname, opts.EtcDir = network.FileHostname{Path: filepath.Join(etc, "hostname")}, etc

	// A Docker node's container hostname is its name in members, etcd
	// and Kubernetes (Talos's container platform): it must win over
	// talos-xxx-yyy. Only a node that owns its root has a hostname of
	// its own; a test node shares this machine's.
	if n.opts.Platform.OwnRoot {
		if h, err := os.Hostname(); err == nil {
			opts.PlatformHostname = h
		}
	}

	return opts, nil
}

// timedService syncs time on metal; container mode leaves the clock to the
// host, so it is Skipped there.
func (n *Node) timedService(cfg *configs.Config) supervisor.Service {
	svc := supervisor.Service{ID: "timed", DependsOn: []string{"machined"}}
	if !n.opts.Platform.IsMetal() {
		return svc
	}

	opts := timed.Options{Store: n.store, SetClock: true, Servers: []string{"time.cloudflare.com"}}
	if cfg.Machine != nil && cfg.Machine.Time != nil {
		if len(cfg.Machine.Time.Servers) > 0 {
			opts.Servers = cfg.Machine.Time.Servers
		}

		opts.Disabled = cfg.Machine.Time.Disabled
		opts.BootTimeout = cfg.Machine.Time.BootTimeout
	}

	svc.Runner = supervisor.GoroutineRunner(func(ctx context.Context, w io.Writer) error {
		return timed.Run(ctx, opts, w)
	})

	return svc
}
