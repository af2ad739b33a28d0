// Package networkd is the networkd applet: it applies the network part of
// a machine config to the current network namespace with its own private
// bus and keeps it reconciled until SIGTERM. Inside machined the same
// controllers run on the node's bus instead (network.Register).
package networkd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/resources/config"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// Applet is networkd's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "networkd",
	Summary: "network: links, addresses, routes, DHCP, hostname, resolvers over netlink",
	Main:    Main,
}

const usage = `Usage: networkd --config machine.yaml [--once] [--etc-dir DIR] [--hostname-file FILE]

Apply machine.network of a machine config to the current network namespace
over netlink (links, MTU, addresses, routes, DHCPv4 leases, hostname,
resolvers) and keep it reconciled until SIGTERM or SIGINT; SIGHUP rereads
the config. networkd only removes what it created: routes carry
rtm_protocol 116, links it creates the alias "talosbox". With --once it
applies the config (waiting, up to --timeout, for the lease of every
dhcp: true interface), reports, and exits 1 if anything could not be
applied.

resolv.conf and hosts are written only into --etc-dir, and the hostname only
into --hostname-file (or the kernel's, with --set-hostname): networkd never
touches the host's /etc on its own.

Flags:
`

// options is the parsed command line.
type options struct {
	config       string
	once         bool
	etcDir       string
	hostnameFile string
	setHostname  bool
	cmdline      string
	nodeID       string
	netns        string
	timeout      time.Duration
	verbose      bool
}

// Main runs networkd with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	fs := applet.NewFlags("networkd", usage, env)

	var o options

	fs.StringVar(&o.config, "config", "", "machine config file (required)")
	fs.BoolVar(&o.once, "once", false, "apply once and exit; non-zero if something could not be applied")
	fs.StringVar(&o.etcDir, "etc-dir", "", "directory to render resolv.conf and hosts into (default: none)")
	fs.StringVar(&o.hostnameFile, "hostname-file", "", "file to write the hostname into (default: none)")
	fs.BoolVar(&o.setHostname, "set-hostname", false, "set the kernel hostname (sethostname); for a machine, not a container")
	fs.StringVar(&o.cmdline, "cmdline", "", "kernel command line to read ip= and talos.hostname= from")
	fs.StringVar(&o.nodeID, "node-id", "", "node identity for the default hostname (default: /etc/machine-id)")
	fs.StringVar(&o.netns, "netns", "", "network namespace path to manage (default: the current one)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "with --once, how long to wait for the network to settle")
	fs.BoolVar(&o.verbose, "v", false, "log controller activity to stderr")
	if code, done := fs.Parse(args); done {
		return code
	}

	if o.config == "" || fs.NArg() > 0 {
		fmt.Fprintln(env.Stderr, "networkd: --config FILE is required and takes no arguments")
		return 2
	}

	if o.nodeID == "" {
		if b, err := os.ReadFile("/etc/machine-id"); err == nil {
			o.nodeID = string(b)
		}
	}

	return run(ctx, o, env)
}

func loadConfig(path string) (*config.MachineConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}

	cfg, err := configs.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}

	return bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID,
		config.MachineConfigSpec{Config: cfg, YAML: string(data)}), nil
}

func run(ctx context.Context, o options, env applet.Env) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	mc, err := loadConfig(o.config)
	if err != nil {
		fmt.Fprintf(env.Stderr, "networkd: %v\n", err)
		return 1
	}

	store := bus.NewStore(bus.StoreOptions{})
	if err := store.Create(ctx, mc, bus.WithOwner("networkd")); err != nil {
		fmt.Fprintf(env.Stderr, "networkd: %v\n", err)
		return 1
	}

	logLevel := slog.LevelError
	if o.verbose {
		logLevel = slog.LevelDebug
	}

	rt := bus.NewRuntime(store, bus.RuntimeOptions{Logger: slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: logLevel}))})

	// The same DHCPv4 operator factory machined wires in: alone or in a
	// node, dhcp: true on an interface takes a lease on it.
	opts := network.Options{NetNSPath: o.netns, KernelCmdline: o.cmdline, NodeID: o.nodeID, EtcDir: o.etcDir, Operators: network.DHCP4Operators}

	switch {
	case o.setHostname:
		opts.Hostname = network.KernelHostname{}
	case o.hostnameFile != "":
		opts.Hostname = network.FileHostname{Path: o.hostnameFile}
	}

	if err := network.Register(rt, opts); err != nil {
		fmt.Fprintf(env.Stderr, "networkd: %v\n", err)
		return 1
	}

	rtCtx, cancel := context.WithCancel(ctx)

	var wg sync.WaitGroup

	wg.Go(func() { rt.Run(rtCtx) }) //nolint:errcheck // returns nil once cancelled

	defer func() {
		cancel()
		wg.Wait()
	}()

	if o.once {
		return once(ctx, store, o, env)
	}

	return serve(ctx, store, o, env)
}

// serve keeps the network reconciled, rereading the config on SIGHUP and
// printing the NetworkStatus whenever it changes.
func serve(ctx context.Context, store *bus.Store, o options, env applet.Env) int {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)

	defer signal.Stop(hup)

	w, err := store.Watch(ctx, statusPointer())
	if err != nil {
		fmt.Fprintf(env.Stderr, "networkd: %v\n", err)
		return 1
	}
	defer w.Close()

	for {
		select {
		case <-ctx.Done():
			return 0
		case <-hup:
			if err := reload(ctx, store, o.config); err != nil {
				fmt.Fprintf(env.Stderr, "networkd: reload: %v\n", err)
			}
		case ev, ok := <-w.Events():
			if !ok {
				return 0
			}

			if ev.Type == bus.Created || ev.Type == bus.Updated {
				printStatus(env.Stdout, ev.Resource.(*networkres.NetworkStatus).TypedSpec()) //nolint:forcetypeassert // only networkd writes it
			}
		}
	}
}

func reload(ctx context.Context, store *bus.Store, path string) error {
	mc, err := loadConfig(path)
	if err != nil {
		return err
	}

	_, err = store.Modify(ctx, mc, func(cur bus.Resource) error {
		*cur.(*config.MachineConfig).TypedSpec() = *mc.TypedSpec() //nolint:forcetypeassert // created as one
		return nil
	}, bus.WithOwner("networkd"))

	return err
}

func statusPointer() bus.Pointer {
	return bus.Pointer{Namespace: networkres.Namespace, Type: networkres.NetworkStatusType, ID: networkres.NetworkStatusID}
}

func printStatus(w io.Writer, st *networkres.NetworkStatusSpec) {
	fmt.Fprintf(w, "[networkd] address=%t connectivity=%t hostname=%t etcfiles=%t issues=%d\n",
		st.AddressReady, st.ConnectivityReady, st.HostnameReady, st.EtcFilesReady, len(st.Issues))

	for _, is := range st.Issues {
		fmt.Fprintf(w, "[networkd]   %s\n", is)
	}
}
