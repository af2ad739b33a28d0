// Package talosctl is the admin CLI, compatible with Talos's talosctl in
// command names, flags and output. It stays a client: it must not import
// node-side packages (etcd, containerd, gRPC servers), which keeps its start
// fast; TestImportGraph guards that.
package talosctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/applets/talosctl/mgmt"
	"github.com/talosbox/talosbox/applets/talosctl/talos"
	"github.com/talosbox/talosbox/internal/applet"
)

// Applet is talosctl's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "talosctl",
	Summary: "admin CLI for talosbox nodes (talosctl-compatible)",
	Main:    Main,
}

// Main runs talosctl with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	root := NewRootCommand(env)
	root.SetArgs(args)

	if err := root.ExecuteContext(ctx); err != nil {
		var ee *global.ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}

		fmt.Fprintf(env.Stderr, "error: %v\n", err)

		return 1
	}

	return 0
}

// NewRootCommand builds the command tree. env supplies output streams and
// the environment, so tests run commands without a process.
func NewRootCommand(env applet.Env) *cobra.Command {
	g := &global.Args{Env: env}

	root := &cobra.Command{
		Use:   "talosctl",
		Short: "A CLI for out-of-band management of Kubernetes nodes created by talosbox",
		Long: `talosctl manages talosbox nodes through their API (port 50000, mutual TLS).
It reads the client configuration from --talosconfig, then $TALOSCONFIG,
then ~/.talos/config.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetIn(env.Stdin)

	pf := root.PersistentFlags()
	pf.StringVar(&g.Talosconfig, "talosconfig", "", "the path to the Talos configuration file. Defaults to 'TALOSCONFIG' env variable if set, otherwise '$HOME/.talos/config'")
	pf.StringVar(&g.Context, "context", "", "context to be used in command")
	pf.StringSliceVarP(&g.Nodes, "nodes", "n", nil, "target the specified nodes")
	pf.StringSliceVarP(&g.Endpoints, "endpoints", "e", nil, "override default endpoints in Talos configuration")

	configCmd := mgmt.NewConfigCommand(g)
	configCmd.AddCommand(mgmt.NewConfigNewCommand(g))

	root.AddCommand(
		talos.NewVersionCommand(g),
		mgmt.NewGenCommand(g),
		mgmt.NewValidateCommand(),
		mgmt.NewMachineconfigCommand(),
		configCmd,
		// Node API commands.
		talos.NewGetCommand(g),
		talos.NewServiceCommand(g),
		talos.NewLogsCommand(g),
		talos.NewDmesgCommand(g),
		talos.NewEventsCommand(g),
		talos.NewApplyConfigCommand(g),
		talos.NewPatchCommand(g),
		talos.NewEditCommand(g),
		talos.NewRebootCommand(g),
		talos.NewUpgradeCommand(g),
		talos.NewRollbackCommand(g),
		talos.NewShutdownCommand(g),
		talos.NewResetCommand(g),
		talos.NewListCommand(g),
		talos.NewReadCommand(g),
		talos.NewCopyCommand(g),
		talos.NewMountsCommand(g),
		talos.NewMemoryCommand(g),
		talos.NewProcessesCommand(g),
		talos.NewContainersCommand(g),
		talos.NewStatsCommand(g),
		talos.NewHealthCommand(g),
		mgmt.NewClusterCommand(g),
		talos.NewBootstrapCommand(g),
		talos.NewEtcdCommand(g),
		talos.NewKubeconfigCommand(g),
		talos.NewImageCommand(g),
		talos.NewConformanceCommand(g),
		talos.NewMetaCommand(g),
		talos.NewUpgradeK8sCommand(g),
		talos.NewConvertK8sCommand(g),
		// Day-2 operations.
		talos.NewDashboardCommand(g),
		talos.NewTimeCommand(g),
		talos.NewRestartCommand(g),
		talos.NewUsageCommand(g),
		talos.NewNetstatCommand(g),
		talos.NewPcapCommand(g),
		talos.NewInspectCommand(g),
		talos.NewWipeCommand(g),
		talos.NewDisksCommand(g),
		talos.NewCgroupsCommand(g),
		talos.NewRotateCACommand(g),
		talos.NewSupportCommand(g, func(ctx context.Context, args []string, out, errOut io.Writer) int {
			return Main(ctx, args, applet.Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut, Getenv: env.Getenv})
		}),
	)

	return root
}
