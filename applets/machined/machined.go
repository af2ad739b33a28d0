// Package machined is PID 1: mounts, the boot sequence, the service
// supervisor and the machine config. It answers to "init" as well.
package machined

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/apid"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/controlplane"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/reaper"
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
// machine reboots.
const fatalDelay = 10 * time.Second

const usage = `Usage: machined [--platform metal|container] [--state-dir DIR] [--config FILE]

Run the node: mount pseudo filesystems (metal), acquire the machine config,
start the services and keep them running. With no config the node waits in
maintenance mode for 'talosctl apply-config --insecure'.

The platform comes from --platform, then $TALOSBOX_PLATFORM, then detection.
The config comes from --config, then $TALOSBOX_CONFIG, then the one persisted
in the state dir (talos.config= on the kernel command line on metal), then,
in container mode, $USERDATA (base64).
In container mode it also runs when it is not PID 1, and SIGTERM or SIGINT
stop it in order and make it exit 0.

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

	return run(ctx, p, nodeConfig{path: *configPath, userData: userData, noEtcd: !*withEtcd}, *listen, *networkd, env)
}

// nodeConfig is where the node's config may come from.
type nodeConfig struct {
	path     string
	userData []byte
	noEtcd   bool
}

func run(ctx context.Context, p platform.Platform, cfg nodeConfig, listen string, networkd bool, env applet.Env) int {
	pid1 := os.Getpid() == 1

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

	node, err := machine.New(machine.Options{
		Platform:       p,
		ConfigPath:     cfg.path,
		PlatformConfig: cfg.userData,
		Console:        env.Stdout,
		EarlyServices:  apid.EarlyServices(ring, listen, plane),
		Services:       plane.Services,
		LeaveCluster:   plane.Leave,
		Operators:      plane.Operators,
		Controllers:    plane.Controllers,
		Definitions:    controlplane.Definitions,
		Networkd:       networkd,
		OnEvent:        func(ev machine.Event) { ring.Publish(ev.Type, ev.Message, ev.Fields) },
	})
	if err != nil {
		return fatal(p, env, err)
	}

	err = node.Run(ctx)

	switch {
	case err == nil || errors.Is(err, machine.ErrPowerOff) || errors.Is(err, machine.ErrReboot):
		fmt.Fprintln(env.Stdout, "[talos] machined stopped")

		if p.IsMetal() && pid1 {
			cmd := unix.LINUX_REBOOT_CMD_POWER_OFF
			if errors.Is(err, machine.ErrReboot) {
				cmd = unix.LINUX_REBOOT_CMD_RESTART
			}

			platform.UnmountAll() // syncs first
			unix.Reboot(cmd)      //nolint:errcheck // nothing left to do
		}

		return 0
	default:
		return fatal(p, env, err)
	}
}

// fatal reports an error that stops the node. On metal as PID 1 it must
// never return (the kernel would panic): it shows the reason, waits, and
// reboots.
func fatal(p platform.Platform, env applet.Env, err error) int {
	fmt.Fprintf(env.Stderr, "[talos] fatal: %v\n", err)

	if p.IsMetal() && os.Getpid() == 1 {
		fmt.Fprintf(env.Stderr, "[talos] rebooting in %s\n", fatalDelay)
		time.Sleep(fatalDelay) // the operator needs time to read the console
		platform.UnmountAll()
		unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART) //nolint:errcheck

		select {} // never return from init
	}

	return 1
}
