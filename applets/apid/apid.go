// Package apid is the apid applet: the node API (internal/apid) run alone
// for a node whose state lives in a directory, on a bus of its own, until
// SIGTERM. Inside machined the same server runs as an early service of
// the node.
package apid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/apid"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/machine/server"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/render"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// Applet is apid's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "apid",
	Summary: "node API: gRPC, mutual TLS, port 50000",
	Main:    Main,
}

const usage = `Usage: apid --state-dir DIR [--config FILE] [--listen ADDR]

Serve the node API (gRPC with mutual TLS, :50000) alone: a node whose
state lives in --state-dir, with its machine config on a bus of its own
and none of machined's services (no containerd, kubelet, etcd, trustd or
networkd), as a container-mode node that touches nothing outside its
directory. Every call is authorized by the roles of the client
certificate (os:admin, os:operator, os:reader), which must be signed by the
OS CA of the config (machine.ca): use the talosconfig of talosctl gen config.

The config comes from --config, else from the state dir (where a config
with persist: true is kept); with neither, apid serves maintenance mode and
waits for 'talosctl apply-config --insecure'. A worker config holds no CA
key: apid asks trustd (--trustd, else the control-plane endpoint's host) for
its server certificate. SIGTERM or SIGINT stop it; so do talosctl shutdown
and reboot.

Flags:
`

// options is the parsed command line.
type options struct {
	config, stateDir, listen string
	trustd                   applet.List
}

// Main runs apid with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	fs := applet.NewFlags("apid", usage, env)

	var o options

	fs.StringVar(&o.stateDir, "state-dir", "", "`DIR` holding the node's state: config, identity, files (required)")
	fs.StringVar(&o.config, "config", "", "machine config `FILE` (default: the one kept in the state dir)")
	fs.StringVar(&o.listen, "listen", fmt.Sprintf(":%d", constants.ApidPort), "`ADDR` (host:port) to serve on")
	fs.Var(&o.trustd, "trustd", "trustd `ENDPOINTS` a worker asks for its certificate (host or host:port)")
	if code, done := fs.Parse(args); done {
		return code
	}

	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(env.Stderr, "apid: unexpected argument %q (flags only; see apid --help)\n", fs.Arg(0))
		return 2
	case o.stateDir == "":
		fmt.Fprintln(env.Stderr, "apid: --state-dir DIR is required")
		return 2
	}

	if err := o.check(); err != nil {
		fmt.Fprintf(env.Stderr, "apid: %v\n", err)
		return 1
	}

	return run(ctx, o, env)
}

// check reports what would otherwise only show as a node in maintenance
// mode or a service retrying: a config the node refuses, an address that
// cannot be served.
func (o *options) check() error {
	if o.config != "" {
		data, err := os.ReadFile(o.config)
		if err != nil {
			return fmt.Errorf("read config: %w", err)
		}

		if _, _, err := render.Load(data, configs.ModeContainer); err != nil {
			return fmt.Errorf("config %s: %w", o.config, err)
		}
	}

	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}

	return l.Close()
}

func run(ctx context.Context, o options, env applet.Env) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// Container mode keeps everything under the state dir; OwnRoot stays
	// false (no PID given), so nothing is done to the host's mounts.
	p, err := platform.Detect(platform.Options{Flag: platform.Container, StateDir: o.stateDir})
	if err != nil {
		fmt.Fprintf(env.Stderr, "apid: %v\n", err)
		return 1
	}

	ring := events.New(events.DefaultCapacity)

	node, err := machine.New(machine.Options{
		Platform:      p,
		ConfigPath:    o.config,
		Console:       env.Stdout,
		NoContainerd:  true,
		ImageCacheDir: filepath.Join(p.EphemeralDir, "imagecache"), // not the host's /system/imagecache
		EarlyServices: func(n *machine.Node) []supervisor.Service {
			return []supervisor.Service{apidService(n, ring, o, env.Stdout)}
		},
		OnEvent: func(ev machine.Event) { ring.Publish(ev.Type, ev.Message, ev.Fields) },
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "apid: %v\n", err)
		return 1
	}

	err = node.Run(ctx)

	switch {
	case err == nil || errors.Is(err, machine.ErrPowerOff):
		fmt.Fprintln(env.Stdout, "apid: stopped")
		return 0
	case errors.Is(err, machine.ErrReboot):
		// Alone there is no machine to reboot: exit, and let whatever
		// runs apid (a container's restart policy) start it again.
		fmt.Fprintln(env.Stdout, "apid: stopped for a reboot")
		return 0
	default:
		fmt.Fprintf(env.Stderr, "apid: %v\n", err)
		return 1
	}
}

// apidService is the service machined's apid.EarlyServices makes, with
// the server's own lines (where it serves, in which mode) on the console
// too: run alone, they are what the user watches.
func apidService(n *machine.Node, ring *events.Ring, o options, console io.Writer) supervisor.Service {
	opts := apid.Options{Node: n, Events: ring, Listen: o.listen, TrustdEndpoints: o.trustd}
	machineService := server.Options{Node: n, Events: ring}

	return supervisor.Service{
		ID: "apid",
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, w io.Writer) error {
			log := io.MultiWriter(w, console)
			opts := opts
			machineService.Log = log
			opts.Register = server.Registrar(machineService)

			return apid.Run(ctx, opts, log)
		}),
	}
}
