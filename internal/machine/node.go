package machine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/k8s/validator"
	"github.com/talosbox/talosbox/internal/logring"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/resources"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
	"github.com/talosbox/talosbox/internal/sequencer"
	"github.com/talosbox/talosbox/internal/storage"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// Options configure a Node.
type Options struct {
	Platform platform.Platform
	// ConfigPath is --config or $TALOSBOX_CONFIG. (On metal talos.config=
	// from the kernel command line only seeds a node with nothing
	// persisted, as PlatformConfig does.)
	ConfigPath string
	// PlatformConfig is the config the platform hands over ($USERDATA in
	// container mode, as Docker nodes get theirs). Unlike ConfigPath it
	// only seeds a node with nothing persisted, so an apply-config
	// survives a container restart.
	PlatformConfig []byte
	// Console receives the node's log lines (stdout, or /dev/console).
	Console io.Writer
	// ContainerdPath is the multicall binary whose containerd applet runs
	// the two containerd instances; this very binary when empty.
	ContainerdPath string
	// ImageCacheDir is the OCI layout registryd serves (images.CacheDir
	// when empty); nothing is served when it holds no index.json.
	ImageCacheDir string
	// NoContainerd runs no containerd (tests of other parts).
	NoContainerd bool
	// RuncPath is linked into containerd's PATH as runc; when empty the
	// runc on machined's PATH is used (/bin/runc on a node).
	RuncPath string
	// OOMScoreAdjPath is where machined tries to lower its own
	// oom_score_adj to learn whether pods may (/proc/self/oom_score_adj
	// when empty, "-" for a node known not to).
	OOMScoreAdjPath string
	// EarlyServices are started with machined, before there is a config:
	// apid serves maintenance mode from there, as on Talos.
	EarlyServices func(*Node) []supervisor.Service
	// Services are the services that need the config, from the packages
	// machined wires in (etcd and trustd on control planes). They are
	// started with the node's own after every config load.
	Services func(n *Node, cfg *configs.Config) []supervisor.Service
	// LeaveCluster leaves etcd on a graceful reset, before the services
	// stop; nil on a node that never runs etcd.
	LeaveCluster func(ctx context.Context, w io.Writer) error
	// Drain cordons the node in Kubernetes and evicts its pods before an
	// upgrade's reboot; nil where no kubelet runs. Its failure is
	// reported and the reboot goes on: the new slot is already written.
	Drain func(ctx context.Context, w io.Writer) error
	// OnEvent receives the node's events: service state changes, sequence,
	// phase and task transitions, config load errors. It must not block.
	OnEvent func(Event)
	// Networkd runs networkd's controllers in machined, managing the
	// network namespace machined runs in: on metal, or in a container (or
	// test namespace) of its own. Leave it off when the node shares the
	// host's network namespace.
	Networkd bool
	// StopTimeout bounds each service's stop (30 s by default).
	StopTimeout time.Duration
	// Controllers are other packages' controllers, run on the node's bus
	// beside machined's own (discovery).
	Controllers func(*Node) []bus.Controller
	// Operators builds networkd operators beyond DHCP (the shared VIP);
	// it returns (nil, nil) for what it does not build.
	Operators network.OperatorFactory
	// MetaPath is a META partition (or image file) to use instead of the
	// one on the system disk, on any platform (tests; Talos's
	// meta.WithFixedPath).
	MetaPath string
}

// Event is one entry of the node's event stream (`talosctl events`).
type Event struct {
	Type    string // "machine.ServiceStateEvent", "machine.TaskEvent", ...
	Message string
	Fields  map[string]string
}

func (n *Node) emit(ev Event) {
	if n.opts.OnEvent != nil {
		n.opts.OnEvent(ev)
	}
}

// Platform is where the node runs.
func (n *Node) Platform() platform.Platform { return n.opts.Platform }

// Node is one running machine.
type Node struct {
	opts     Options
	store    *bus.Store
	registry *bus.Registry
	state    State
	log      *logring.Ring
	ctrlLog  *logring.Ring
	console  io.Writer
	seq      *sequencer.Runner

	// configs offered in maintenance mode reach the waiting boot here.
	offered chan loadedConfig
	// requests carry reboot, shutdown and reset from the API to Run.
	requests chan request

	// cmdline is the kernel command line (metal); cmdlineConfig its
	// talos.config=, which seeds a node with nothing persisted.
	cmdline       platform.Cmdline
	cmdlineConfig string
	// seed is talos.platform=nocloud's NoCloud seed, read once.
	seed seed
	// embeddedConfig is the config the initramfs carried (metal).
	embeddedConfig []byte
	sysRoot        string // sysfs, where disks are found
	// controllers is the bus runtime machined runs, once it started.
	controllers atomic.Pointer[bus.Runtime]

	// containerd is the container runtime; the boot starts its services
	// and machined's controllers render its config.
	containerd *cri.Containerd
	// kubeValidator finds the components' validators in its images.
	kubeValidator *validator.Finder

	// volumes are the system disk and the user disks; the boot and reset
	// sequences decide when they are opened, mounted and wiped.
	volumes *storage.Volumes

	// applyMu makes applies one at a time.
	applyMu sync.Mutex

	mu  sync.Mutex
	sup *supervisor.Supervisor
	// staged: STATE holds a config other than the active one, for the
	// next boot (a staged or reboot apply).
	staged   bool
	booted   bool        // a boot of this process got as far as a config
	tryTimer *time.Timer // pending revert of a "try" apply
	// upgradeMu is held by an upgrade or a rollback: one at a time.
	upgradeMu sync.Mutex
	// failedPhase and failedTask name what failed the last sequence.
	failedPhase, failedTask string
	// tryPrev is the config a pending "try" reverts to: the one in effect
	// before the first of consecutive tries.
	tryPrev loadedConfig
	// bootWatch hears of service failures while a boot waits for the
	// services (startServices), nil otherwise.
	bootWatch chan bootNotice

	// envBase holds what machine.env variables were before a config set
	// them (nil: unset), to undo them.
	envMu   sync.Mutex
	envBase map[string]*string
}

// New prepares a node; Run boots it.
func New(opts Options) (*Node, error) {
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 30 * time.Second
	}

	if opts.Console == nil {
		opts.Console = os.Stdout
	}

	n := &Node{
		opts:     opts,
		store:    bus.NewStore(bus.StoreOptions{}),
		registry: bus.NewRegistry(),
		state:    State{Dir: opts.Platform.StateDir},
		log:      logring.New(1 << 20),
		ctrlLog:  logring.New(1 << 20),
		offered:  make(chan loadedConfig),
		requests: make(chan request),
		sysRoot:  storage.SysRoot,

		kubeValidator: newKubeValidator(opts.Platform),
	}

	n.containerd = cri.NewContainerd(cri.ContainerdOptions{
		Runtime:         cri.NewRuntime(opts.Platform),
		Executable:      opts.ContainerdPath,
		RuncPath:        opts.RuncPath,
		OOMScoreAdjPath: opts.OOMScoreAdjPath,
		OnCRILoadError: func(err error) {
			n.bootNotify(bootNotice{id: constants.CRIServiceID, err: err})
		},
	})

	n.volumes = storage.NewVolumes(storage.Options{
		Platform: opts.Platform,
		SysRoot:  n.sysRoot,
		MetaPath: opts.MetaPath,
		Cmdline:  func() platform.Cmdline { return n.cmdline },
		Store:    n.store,
		Owner:    owner,
		Logf:     n.logf,
	})

	n.console = io.MultiWriter(opts.Console, n.log)
	n.seq = &sequencer.Runner{Console: n.console, Observe: func(kind, name, action string, err error) {
		n.noteSequence(kind, name, action)

		ev := Event{
			Type:    "machine." + map[string]string{"sequence": "SequenceEvent", "phase": "PhaseEvent", "task": "TaskEvent"}[kind],
			Message: fmt.Sprintf("%s %s: %s", kind, name, action),
			Fields:  map[string]string{kind: name, "action": action},
		}
		if err != nil {
			ev.Fields["error"] = err.Error()
		}

		n.emit(ev)
	}}

	defs := resources.Definitions()
	for _, d := range defs {
		if err := n.registry.Register(d); err != nil {
			return nil, err
		}
	}

	return n, nil
}

// Store is the node's bus.
func (n *Node) Store() *bus.Store { return n.store }

// SysRoot is the sysfs where the node finds its disks.
func (n *Node) SysRoot() string { return n.sysRoot }

// Controllers is the runtime of the node's controllers, nil until machined
// started it.
func (n *Node) Controllers() *bus.Runtime { return n.controllers.Load() }

// Identity is the node's stable random ID (Talos's node identity),
// created on first use and kept in STATE.
func (n *Node) Identity() (string, error) { return n.state.Identity() }

// Registry holds the definitions of every resource type on the bus.
func (n *Node) Registry() *bus.Registry { return n.registry }

// Supervisor runs the node's services (nil before the first boot).
func (n *Node) Supervisor() *supervisor.Supervisor {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.sup
}

// ServiceRunning says whether the service id runs under this boot's
// supervisor; false before the first boot has one.
func (n *Node) ServiceRunning(id string) bool {
	sup := n.Supervisor()
	if sup == nil {
		return false
	}

	st, ok := sup.Status(id)

	return ok && st.State == supervisor.Running
}

// RestartService restarts the service id under this boot's supervisor.
func (n *Node) RestartService(ctx context.Context, id string) error {
	sup := n.Supervisor()
	if sup == nil {
		return fmt.Errorf("restart %s: the node runs no services yet", id)
	}

	if err := sup.Restart(ctx, id); err != nil {
		return fmt.Errorf("restart %s: %w", id, err)
	}

	return nil
}

// Log is machined's own log.
func (n *Node) Log() *logring.Ring { return n.log }

// ControllerLog is the log of the controllers on the node's bus, as
// Talos's controller-runtime log.
func (n *Node) ControllerLog() *logring.Ring { return n.ctrlLog }

func (n *Node) logf(format string, args ...any) {
	fmt.Fprintf(n.console, "[talos] "+format+"\n", args...)
}

// requestKind is a lifecycle action asked for while running.
type requestKind int

const (
	reqReboot requestKind = iota
	reqShutdown
	reqReset
	reqUpgradeReboot
)

type request struct {
	kind  requestKind
	reset ResetOptions
	// drain: a shutdown that cordons and drains first (not --force).
	drain bool
	done  chan error
}

// ErrPowerOff is returned by Run when the node shut down on request (a
// metal caller powers the machine off).
var ErrPowerOff = errors.New("power off")

// ErrReboot is returned by Run on metal when the node stopped to reboot;
// the caller reboots the machine. Container mode reboots in-process.
var ErrReboot = errors.New("reboot")

// Run boots the node and serves until ctx ends (SIGTERM in container
// mode) or a shutdown is requested. An orderly end returns nil, or
// ErrPowerOff for a requested shutdown; in container mode a reboot boots
// again in-process.
func (n *Node) Run(ctx context.Context) error {
	if err := n.store.Create(ctx, bus.NewTyped(runtime.NamespaceRuntime, runtime.MachineStageType, runtime.MachineID, runtime.MachineStageSpec{Stage: runtime.StageBooting}), bus.WithOwner(owner)); err != nil {
		return err
	}

	for {
		if err := n.boot(ctx); err != nil {
			if ctx.Err() != nil {
				return n.shutdown(context.WithoutCancel(ctx), false)
			}

			if errors.Is(err, errRebootNow) {
				n.setStage(ctx, runtime.StageRebooting)

				if err := n.seq.Run(ctx, n.stopSequence("reboot")); err != nil {
					return err
				}

				return ErrReboot
			}

			switch n.fallBack(ctx, err) {
			case fallbackBootAgain:
				continue
			case fallbackReboot:
				n.setStage(ctx, runtime.StageRebooting)
				return ErrReboot
			case fallbackNone:
			}

			return err
		}

		select {
		case <-ctx.Done():
			return n.shutdown(context.WithoutCancel(ctx), false)
		case req := <-n.requests:
			err, again := n.handle(ctx, req)
			req.done <- err

			switch {
			case again:
			case err != nil:
				return err
			case req.kind == reqShutdown || (req.kind == reqReset && !req.reset.Reboot):
				return ErrPowerOff
			default:
				return ErrReboot
			}
		}
	}
}

// boot runs Initialize and Boot: acquire the config (waiting in
// maintenance mode if there is none), then set the machine up and start
// the services.
func (n *Node) boot(ctx context.Context) error {
	n.setStage(ctx, runtime.StageBooting)

	var loaded loadedConfig

	if err := n.seq.Run(ctx, n.initializeSequence(&loaded)); err != nil {
		return err
	}

	if err := n.seq.Run(ctx, n.bootSequence(loaded)); err != nil {
		phase, task := n.lastFailure()
		return &bootError{loaded: loaded, phase: phase, task: task, err: err}
	}

	n.logServices(ctx)

	return nil
}

// logServices prints the Services resources once the boot is done: one
// line an operator (or a test without API access) can read the node from.
func (n *Node) logServices(ctx context.Context) {
	svcs, err := bus.ListAs[*v1alpha1.Service](ctx, n.store, bus.Kind{Namespace: runtime.NamespaceRuntime, Type: v1alpha1.ServiceType})
	if err != nil {
		n.logf("list services: %v", err)
		return
	}

	parts := make([]string, 0, len(svcs))

	for _, s := range svcs {
		spec := s.TypedSpec()

		health := ""
		if spec.Running && !spec.Unknown {
			health = map[bool]string{true: " healthy", false: " unhealthy"}[spec.Healthy]
		}

		parts = append(parts, fmt.Sprintf("%s=%s%s", s.Metadata().ID, spec.State, health))
	}

	n.logf("services: %s", strings.Join(parts, " "))
}

// handle runs a lifecycle request; again says whether Run boots again.
func (n *Node) handle(ctx context.Context, req request) (err error, again bool) {
	switch req.kind {
	case reqReboot:
		n.setStage(ctx, runtime.StageRebooting)

		if err := n.seq.Run(ctx, n.stopSequence("reboot")); err != nil {
			return err, false
		}

		return nil, !n.opts.Platform.IsMetal()
	case reqUpgradeReboot:
		n.setStage(ctx, runtime.StageUpgrading)

		if err := n.seq.Run(ctx, n.upgradeSequence()); err != nil {
			return err, false
		}

		return nil, !n.opts.Platform.IsMetal()
	case reqShutdown:
		return n.shutdown(ctx, req.drain), false
	case reqReset:
		n.setStage(ctx, runtime.StageResetting)

		if err := n.seq.Run(ctx, n.resetSequence(req.reset)); err != nil {
			return err, false
		}

		return nil, req.reset.Reboot && !n.opts.Platform.IsMetal()
	}

	return fmt.Errorf("unknown request %d", req.kind), false
}

func (n *Node) shutdown(ctx context.Context, drain bool) error {
	n.setStage(ctx, runtime.StageShuttingDown)

	seq := &sequencer.Sequence{Name: "shutdown"}
	if drain {
		n.appendDrain(seq)
	}

	return n.seq.Run(ctx, n.appendStop(seq))
}

func (n *Node) setStage(ctx context.Context, st runtime.Stage) {
	_, err := n.store.Modify(ctx, bus.NewTyped(runtime.NamespaceRuntime, runtime.MachineStageType, runtime.MachineID, runtime.MachineStageSpec{}), func(r bus.Resource) error {
		r.(*runtime.MachineStage).TypedSpec().Stage = st //nolint:forcetypeassert // our own type
		return nil
	}, bus.WithOwner(owner))
	if err != nil {
		n.logf("set stage %s: %v", st, err)
	}
}

// slogger is the structured logger handed to controllers.
func (n *Node) slogger() *slog.Logger {
	// Everything goes to the controller-runtime log (talosctl logs
	// controller-runtime); only warnings and errors reach the console.
	return slog.New(slog.NewMultiHandler(
		slog.NewTextHandler(n.ctrlLog, &slog.HandlerOptions{Level: slog.LevelInfo}),
		slog.NewTextHandler(n.console, &slog.HandlerOptions{Level: slog.LevelWarn}),
	))
}
