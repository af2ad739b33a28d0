// Package machined is PID 1: mounts, the boot sequence, the service
// supervisor and the machine config. It answers to "init" as well.
package machined

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/apid"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/controlplane"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/eventsink"
	"github.com/talosbox/talosbox/internal/k8s"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/machine/server"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/reaper"
	"github.com/talosbox/talosbox/internal/supervisor"
	"github.com/talosbox/talosbox/internal/version"
)

// Applet is machined's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "machined",
	Aliases: []string{"init"},
	Summary: "PID 1: boot sequence, service supervisor, machine config",
	Main:    Main,
}

// ConfigEnv names a config file when --config is not given.
const ConfigEnv = "TALOSBOX_CONFIG"

// UserDataEnv carries a base64 config in container mode, as Talos's
// Docker nodes get theirs. It only seeds a node with no persisted config.
const UserDataEnv = "USERDATA"

// fatalDelay is how long a fatal error stays on the console before the
// machine reboots with talosbox.fatal=reboot.
const fatalDelay = 10 * time.Second

const usage = `Usage: machined [--platform metal|container] [--state-dir DIR] [--config FILE]

Run the node: mount pseudo filesystems (metal), acquire the machine config,
start the services and keep them running. With no config the node waits in
maintenance mode for 'talosctl apply-config --insecure'.

The platform comes from --platform, then $TALOSBOX_PLATFORM, then detection.
The config comes from --config, then $TALOSBOX_CONFIG, then the one persisted
in the state dir (STATE on metal), then talos.config= on the kernel command
line (metal: an http(s) or data: URL) or $USERDATA (container, base64).
In container mode it also runs when it is not PID 1, and SIGTERM or SIGINT
stop it in order and make it exit 0.

On metal the first boot with a config partitions the install disk
(machine.install.disk, else talosbox.install.disk= on the kernel command
line, else the first virtio disk) with Talos's layout, and STATE and
EPHEMERAL are mounted at the state dir and /var on every boot; a reset
wipes them.

On metal a fatal boot error is printed on the console; then PID 1 waits,
or with talosbox.fatal=poweroff (tests) or talosbox.fatal=reboot on the
kernel command line powers off or reboots. It never exits.

Flags:
`

// Main runs machined with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	fs := applet.NewFlags("machined", usage, env)

	plat := fs.String("platform", "", "metal or container (default: $TALOSBOX_PLATFORM, then detected)")
	stateDir := fs.String("state-dir", "", "where the node keeps its state (container default /var/lib/talosbox)")
	configPath := fs.String("config", "", "machine config file or http(s) URL (default: $TALOSBOX_CONFIG)")
	listen := fs.String("apid-listen", ":50000", "address apid listens on")
	withEtcd := fs.Bool("etcd", true, "run etcd on control-plane nodes (turn off to run a node alone, as some tests do)")
	kubelet := fs.Bool("kubelet", true, "run the kubelet (turn off for nodes that share the host's filesystem, as some tests run them)")
	networkd := fs.Bool("networkd", true, "manage this network namespace's links, addresses and routes (turn off when sharing the host's)")
	if code, done := fs.Parse(args); done {
		return code
	}

	if *configPath == "" {
		*configPath = env.Getenv(ConfigEnv)
	}

	p, err := platform.Detect(platform.Options{Flag: *plat, StateDir: *stateDir, Getenv: env.Getenv, PID: os.Getpid()})
	if err != nil {
		fmt.Fprintf(env.Stderr, "machined: %v\n", err)
		return 2
	}

	var userData []byte

	if ud := env.Getenv(UserDataEnv); ud != "" && !p.IsMetal() {
		if userData, err = base64.StdEncoding.DecodeString(strings.TrimSpace(ud)); err != nil {
			fmt.Fprintf(env.Stderr, "machined: $%s is not base64: %v\n", UserDataEnv, err)
			return 2
		}
	}

	return run(ctx, p, nodeConfig{path: *configPath, userData: userData, noEtcd: !*withEtcd, noKubelet: !*kubelet}, *listen, *networkd, env)
}

// nodeConfig is where the node's config may come from.
type nodeConfig struct {
	path     string
	userData []byte
	noEtcd   bool
	// noKubelet runs no kubelet (nodes sharing the host's filesystem).
	noKubelet bool
}

func run(ctx context.Context, p platform.Platform, cfg nodeConfig, listen string, networkd bool, env applet.Env) (code int) {
	pid1 := os.Getpid() == 1

	if pid1 && p.IsMetal() {
		// A panic here would end PID 1 and panic the kernel: it becomes a
		// fatal error with its reason on the console. (Services,
		// controllers and sequence tasks recover their own.)
		defer func() {
			if r := recover(); r != nil {
				code = fatal(p, env, fmt.Errorf("machined panicked: %v\n%s", r, debug.Stack()))
			}
		}()
	}

	// As PID 1 only the signals below end the node; the multicall's own
	// handler is replaced so SIGINT on a console does not kill init.
	ctx, stop := signal.NotifyContext(context.WithoutCancel(ctx), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if pid1 || !p.IsMetal() {
		if !pid1 {
			// Adopt orphans of our services, as init would.
			reaper.SetSubreaper() //nolint:errcheck // best effort when not PID 1
		}

		go reaper.Run(ctx)
	}

	fmt.Fprintf(env.Stdout, "[talos] %s, platform %s, state %s\n", version.Short("machined"), p.Name, p.StateDir)

	// One event stream for the node's life; apid serves it (talosctl events).
	ring := events.New(events.DefaultCapacity)

	// etcd and trustd, on control-plane nodes; apid serves the etcd API.
	plane := controlplane.New(controlplane.Options{NoEtcd: cfg.noEtcd})

	// Kubernetes: the control plane's static pods, the kubelet, manifests.
	// A node without runc (a node image built before make images) runs
	// no containers, so no kubelet; it says so rather than failing health.
	noKubelet := cfg.noKubelet || !p.OwnRoot

	if !noKubelet && machine.FindRunc() == "" {
		fmt.Fprintf(env.Stdout, "[talos] no container runtime (runc): the kubelet will not run\n")

		noKubelet = true
	}

	kube := k8s.New(k8s.Options{
		NoKubelet: noKubelet,
		KubeletOff: func() bool {
			c, err := platform.ReadCmdline()
			if err != nil || !p.IsMetal() {
				return false
			}

			if v, ok := c.Get(platform.ParamKubelet); ok && v == "0" {
				fmt.Fprintf(env.Stdout, "[talos] %s=0: the kubelet will not run\n", platform.ParamKubelet)
				return true
			}

			return false
		},
		EtcdClient: func(context.Context) (*clientv3.Client, error) {
			srv, err := plane.Server()
			if err != nil {
				return nil, err
			}

			return srv.Client(), nil
		},
	})

	node, err := machine.New(machine.Options{
		Platform:       p,
		ConfigPath:     cfg.path,
		PlatformConfig: cfg.userData,
		Console:        env.Stdout,
		EarlyServices: withConsoleDashboard(apid.EarlyServices(ring, listen, plane, func(n *machine.Node, log io.Writer) func(*grpc.Server) {
			return server.Registrar(server.Options{Node: n, Plane: plane, Events: ring, Log: log})
		})),
		Services: func(n *machine.Node, c *configs.Config) []supervisor.Service {
			return append(plane.Services(n, c), kube.Services(n, c)...)
		},
		LeaveCluster: plane.LeaveCluster,
		Drain:        drainHook(kube, noKubelet),
		Operators:    plane.Operators,
		Controllers: func(n *machine.Node) []bus.Controller {
			// The event sink publishes the stream apid serves.
			return append(append(plane.Controllers(n), kube.Controllers(n)...), &eventsink.Controller{Events: ring})
		},
		Networkd: networkd,
		OnEvent:  func(ev machine.Event) { ring.Publish(ev.Type, ev.Message, ev.Fields) },
	})
	if err != nil {
		return fatal(p, env, err)
	}

	err = node.Run(ctx)

	switch {
	case err == nil || errors.Is(err, machine.ErrPowerOff) || errors.Is(err, machine.ErrReboot):
		fmt.Fprintln(env.Stdout, "[talos] machined stopped")

		if p.IsMetal() && pid1 {
			if errors.Is(err, machine.ErrReboot) {
				powerDown(env, unix.LINUX_REBOOT_CMD_RESTART, "rebooting")
			}

			powerDown(env, unix.LINUX_REBOOT_CMD_POWER_OFF, "powering off")
		}

		return 0
	default:
		if p.IsMetal() && pid1 {
			revertUpgrade(ctx, node, env, err)
		}

		return fatal(p, env, err)
	}
}

// drainHook is machine.Options.Drain: nil on a node that runs no kubelet.
func drainHook(kube *k8s.Kubernetes, noKubelet bool) func(context.Context, io.Writer) error {
	if noKubelet {
		return nil
	}

	return kube.CordonAndDrain
}

// revertUpgrade reboots into the previous installation when the boot that
// failed was an upgrade's first (Talos's revertBootloader); it returns
// only when there was nothing to revert.
func revertUpgrade(ctx context.Context, node *machine.Node, env applet.Env, bootErr error) {
	reverted, err := node.RevertFailedUpgrade(context.WithoutCancel(ctx))
	if err != nil {
		fmt.Fprintf(env.Stderr, "[talos] %v\n", err)
		return
	}

	if !reverted {
		return
	}

	fmt.Fprintf(env.Stderr, "[talos] fatal: %v\n", bootErr)
	fmt.Fprintln(env.Stderr, "[talos] the upgrade failed to boot: rebooting into the previous installation")

	// As in Talos: panic=0 asks the node to stay down for an operator;
	// otherwise the error stays readable for a 10 s countdown.
	if c, cerr := platform.ReadCmdline(); cerr == nil {
		if v, ok := c.Get("panic"); ok && v == "0" {
			fmt.Fprintln(env.Stderr, "[talos] panic=0 kernel flag found, sleeping forever")
			waitForever()
		}
	}

	for i := int(fatalDelay / time.Second); i >= 0; i-- {
		fmt.Fprintf(env.Stderr, "[talos] rebooting in %d seconds\n", i)

		if i > 0 {
			time.Sleep(time.Second)
		}
	}

	powerDown(env, unix.LINUX_REBOOT_CMD_RESTART, "rebooting")
}

// powerDown syncs, unmounts and reboots or powers the machine off. The
// console line is the last one the machine prints: harnesses that run
// QEMU with -no-reboot tell a reboot from a power-off by it.
func powerDown(env applet.Env, cmd int, what string) {
	fmt.Fprintf(env.Stdout, "[talos] %s\n", what)

	platform.UnmountAll() // syncs first

	if err := unix.Reboot(cmd); err != nil {
		fmt.Fprintf(env.Stderr, "[talos] %s: %v\n", what, err)
	}

	waitForever()
}

// waitForever parks PID 1, which must never return. Sleeping (rather than
// an empty select) keeps the Go runtime from calling it a deadlock.
func waitForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// fatal reports an error that stops the node. On metal as PID 1 it must
// never return (the kernel would panic): it shows the reason, then does
// what talosbox.fatal= on the kernel command line says: wait (the
// default, so that an operator can read the console), power off (tests
// fail in seconds instead of at a timeout) or reboot after a delay.
func fatal(p platform.Platform, env applet.Env, err error) int {
	fmt.Fprintf(env.Stderr, "[talos] fatal: %v\n", err)

	if !p.IsMetal() || os.Getpid() != 1 {
		return 1
	}

	action := platform.FatalWait
	if c, cerr := platform.ReadCmdline(); cerr == nil {
		action, _ = c.FatalAction()
	}

	switch action {
	case platform.FatalPowerOff:
		powerDown(env, unix.LINUX_REBOOT_CMD_POWER_OFF, "powering off ("+platform.ParamFatal+"=poweroff)")
	case platform.FatalReboot:
		fmt.Fprintf(env.Stderr, "[talos] rebooting in %s (%s=reboot)\n", fatalDelay, platform.ParamFatal)
		time.Sleep(fatalDelay) // the operator needs time to read the console
		powerDown(env, unix.LINUX_REBOOT_CMD_RESTART, "rebooting")
	}

	fmt.Fprintf(env.Stderr, "[talos] the node has stopped: power-cycle it (%s=poweroff or reboot on the kernel command line acts on its own)\n", platform.ParamFatal)
	waitForever()

	return 1
}
