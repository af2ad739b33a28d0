package mgmt

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/configpatch"
)

func NewMachineconfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "machineconfig",
		Aliases: []string{"mc"},
		Short:   "Machine config related commands",
	}

	cmd.AddCommand(newMachineconfigPatchCommand())

	return cmd
}

func newMachineconfigPatchCommand() *cobra.Command {
	var (
		patches []string
		output  string
	)

	cmd := &cobra.Command{
		Use:   "patch <machineconfig-file>",
		Short: "Patch a machine config",
		Long: `Apply patches to a machine config file and print the result, or write it with -o.
A patch is inline YAML/JSON or @file: a list of RFC 6902 operations is a JSON
patch, a mapping is a strategic merge patch (interfaces merge by 'interface',
vlans by 'vlanId', files by 'path', routes by 'network'; '$patch: delete'
removes an element). The result must still decode strictly.`,
		Example: `  talosctl machineconfig patch worker.yaml --patch @patch.yaml -o worker-patched.yaml
  talosctl mc patch cp.yaml -p '[{"op":"add","path":"/machine/network/hostname","value":"cp1"}]'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read config: %w", err)
			}

			ps, err := configpatch.LoadAll(patches)
			if err != nil {
				return err
			}

			out, err := configpatch.Apply(doc, ps...)
			if err != nil {
				return fmt.Errorf("patch %s: %w", args[0], err)
			}

			if _, err := configs.Decode(out); err != nil {
				return fmt.Errorf("patched config: %w", err)
			}

			if output == "" {
				_, err = cmd.OutOrStdout().Write(out)
				return err
			}

			// The input may hold secrets, so the output is private too.
			return atomicfile.Write(output, out, 0o600)
		},
	}

	cmd.Flags().StringArrayVarP(&patches, "patch", "p", nil, "patch to apply to the config (inline, or @file)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output destination; stdout when empty")
	cmd.MarkFlagRequired("patch") //nolint:errcheck

	return cmd
}
