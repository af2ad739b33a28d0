package talos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/configpatch"
)

// applyFlags are the apply-mode flags shared by apply-config, patch and edit.
type applyFlags struct {
	mode      string
	immediate bool
	onReboot  bool
	dryRun    bool
	timeout   time.Duration
}

func (a *applyFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&a.mode, "mode", "m", "auto", "apply config mode (auto, no-reboot, reboot, staged, try)")
	f.BoolVar(&a.immediate, "immediate", false, "apply the config without a reboot (same as --mode=no-reboot)")
	f.BoolVar(&a.onReboot, "on-reboot", false, "apply the config on the next reboot (same as --mode=staged)")
	f.BoolVar(&a.dryRun, "dry-run", false, "check how the config change will be applied in dry-run mode")
	f.DurationVar(&a.timeout, "timeout", time.Minute, "the config will be rolled back after the specified timeout (if try mode is selected)")
}

var applyModes = map[string]machine.ApplyConfigurationRequest_Mode{
	"auto":      machine.ApplyConfigurationRequest_AUTO,
	"no-reboot": machine.ApplyConfigurationRequest_NO_REBOOT,
	"reboot":    machine.ApplyConfigurationRequest_REBOOT,
	"staged":    machine.ApplyConfigurationRequest_STAGED,
	"try":       machine.ApplyConfigurationRequest_TRY,
}

// request builds the ApplyConfiguration call; --immediate and --on-reboot
// are Talos 0.9's spellings of two modes and conflict with a different -m.
func (a *applyFlags) request(cmd *cobra.Command, data []byte) (*machine.ApplyConfigurationRequest, error) {
	mode := a.mode

	for _, alias := range []struct {
		set  bool
		flag string
		mode string
	}{{a.immediate, "--immediate", "no-reboot"}, {a.onReboot, "--on-reboot", "staged"}} {
		if !alias.set {
			continue
		}

		if cmd.Flags().Changed("mode") && mode != alias.mode {
			return nil, fmt.Errorf("%s conflicts with --mode=%s", alias.flag, mode)
		}

		if mode != "auto" && mode != alias.mode {
			return nil, errors.New("--immediate and --on-reboot are mutually exclusive")
		}

		mode = alias.mode
	}

	m, ok := applyModes[mode]
	if !ok {
		return nil, fmt.Errorf("unknown apply mode %q: use auto, no-reboot, reboot, staged or try", mode)
	}

	req := &machine.ApplyConfigurationRequest{Data: data, Mode: m, DryRun: a.dryRun}
	if m == machine.ApplyConfigurationRequest_TRY {
		req.TryModeTimeout = durationpb.New(a.timeout)
	}

	return req, nil
}

// printApplyResult reports what the node did: warnings and the mode
// details go to stderr as in talosctl; a dry run's diff is the command's
// output, so it goes to stdout.
func printApplyResult(cmd *cobra.Command, node string, multi, dryRun bool, r *machine.ApplyConfiguration) {
	prefix := ""
	if multi {
		prefix = node + ": "
	}

	for _, w := range r.GetWarnings() {
		fmt.Fprintf(cmd.ErrOrStderr(), "%sWARNING: %s\n", prefix, w)
	}

	details := r.GetModeDetails()
	if details == "" {
		return
	}

	out := cmd.ErrOrStderr()
	if dryRun {
		out = cmd.OutOrStdout()
	}

	if multi {
		details = strings.ReplaceAll(strings.TrimRight(details, "\n"), "\n", "\n"+prefix)
	}

	fmt.Fprintf(out, "%s%s\n", prefix, strings.TrimRight(details, "\n"))
}

func NewApplyConfigCommand(g *global.Args) *cobra.Command {
	var (
		af       applyFlags
		file     string
		patches  []string
		insecure bool
	)

	cmd := &cobra.Command{
		Use:     "apply-config",
		Aliases: []string{"apply"},
		Short:   "Apply a new configuration to a node",
		Long: `Sends a machine config to the nodes. --mode decides how it takes effect:
auto (default: live when possible, else with a reboot), no-reboot (--immediate:
refused when a change needs a reboot), reboot, staged (--on-reboot) or try
(rolled back after --timeout unless confirmed). --insecure reaches a node in
maintenance mode, which has no config and so no certificates yet.`,
		Example: `  talosctl apply-config --insecure -n 10.5.0.2 -f controlplane.yaml
  talosctl -n 10.5.0.2 apply-config -f config.yaml --immediate
  talosctl -n 10.5.0.2 apply -f config.yaml -p @patch.yaml --dry-run`,
		Args: func(_ *cobra.Command, args []string) error {
			// `apply machineconfig -f FILE` is Talos 0.9's spelling.
			if len(args) > 1 || (len(args) == 1 && !isMachineConfigType(args[0])) {
				return fmt.Errorf("unexpected arguments %v: the config is given with -f", args)
			}

			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("no filename supplied for configuration: use -f")
			}

			data, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("read config: %w", err)
			}

			if len(patches) > 0 {
				ps, err := configpatch.LoadAll(patches)
				if err != nil {
					return err
				}

				if data, err = configpatch.Apply(data, ps...); err != nil {
					return fmt.Errorf("patch %s: %w", file, err)
				}
			}

			req, err := af.request(cmd, data)
			if err != nil {
				return err
			}

			return g.WithSession(insecure, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.ApplyConfiguration, error) {
					return c.ApplyConfiguration(ctx, req)
				})

				for _, r := range results {
					if r.Err == nil {
						printApplyResult(cmd, s.NodeName(r.Node, r.Value.GetMetadata()), len(results) > 1, af.dryRun, r.Value)
					}
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	af.register(cmd)
	cmd.Flags().StringVarP(&file, "file", "f", "", "the filename of the updated configuration")
	cmd.Flags().StringArrayVarP(&patches, "config-patch", "p", nil, "the list of config patches to apply to the local config file before sending it to the node")
	cmd.Flags().BoolVarP(&insecure, "insecure", "i", false, "apply the config using the insecure (encrypted with no auth) maintenance service")

	return cmd
}

func isMachineConfigType(s string) bool {
	switch strings.ToLower(s) {
	case "mc", "machineconfig", "machineconfigs", "machineconfigs.config.talos.dev":
		return true
	}

	return false
}
