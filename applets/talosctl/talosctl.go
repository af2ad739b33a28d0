// Package talosctl is the admin CLI, compatible with Talos's talosctl in
// command names, flags and output. It stays a client: it must not import
// node-side packages (etcd, containerd, gRPC servers), which keeps its start
// fast; TestImportGraph guards that.
package talosctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/internal/applet"
)

// Applet is talosctl's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "talosctl",
	Summary: "admin CLI for talosbox nodes (talosctl-compatible)",
	Main:    Main,
}

// GlobalFlags are the flags every talosctl command accepts.
type GlobalFlags struct {
	env applet.Env

	Talosconfig string
	Context     string
	Nodes       []string
	Endpoints   []string
}

// Main runs talosctl with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	root := NewRootCommand(env)
	root.SetArgs(args)

	if err := root.ExecuteContext(ctx); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}

		fmt.Fprintf(env.Stderr, "error: %v\n", err)

		return 1
	}

	return 0
}

// exitError carries an exit status chosen by a command that has already
// printed its own message.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// NewRootCommand builds the command tree. env supplies output streams and
// the environment, so tests run commands without a process.
func NewRootCommand(env applet.Env) *cobra.Command {
	g := &GlobalFlags{env: env}

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

	configCmd := newConfigCommand(g)
	configCmd.AddCommand(newConfigNewCommand(g))

	root.AddCommand(
		newVersionCommand(g),
		newGenCommand(g),
		newValidateCommand(),
		newMachineconfigCommand(),
		configCmd,
		// Node API commands.
		newGetCommand(g),
		newServiceCommand(g),
		newLogsCommand(g),
		newDmesgCommand(g),
		newEventsCommand(g),
		newApplyConfigCommand(g),
		newPatchCommand(g),
		newEditCommand(g),
		newRebootCommand(g),
		newUpgradeCommand(g),
		newRollbackCommand(g),
		newShutdownCommand(g),
		newResetCommand(g),
		newListCommand(g),
		newReadCommand(g),
		newCopyCommand(g),
		newMountsCommand(g),
		newMemoryCommand(g),
		newProcessesCommand(g),
		newContainersCommand(g),
		newStatsCommand(g),
		newHealthCommand(g),
		newClusterCommand(g),
		newBootstrapCommand(g),
		newEtcdCommand(g),
		newKubeconfigCommand(g),
		newImageCommand(g),
		newMetaCommand(g),
		newUpgradeK8sCommand(g),
		newConvertK8sCommand(g),
	)

	return root
}
