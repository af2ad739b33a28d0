package talos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/configpatch"
)

func machineConfigArgs(_ *cobra.Command, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("expected the resource type (mc) and an optional ID")
	}

	if !isMachineConfigType(args[0]) {
		return fmt.Errorf("only the machine config (mc) can be changed this way, not %q", args[0])
	}

	if len(args) == 2 && args[1] != client.ActiveConfigID {
		return fmt.Errorf("machine config %q does not exist: the active config is %q", args[1], client.ActiveConfigID)
	}

	return nil
}

func NewPatchCommand(g *global.Args) *cobra.Command {
	var (
		af        applyFlags
		patches   []string
		patchFile string
	)

	cmd := &cobra.Command{
		Use:   "patch <type> [<id>]",
		Short: "Update field(s) of a resource using a JSON patch or a strategic merge patch",
		Long: `Fetches each node's machine config, applies the patches locally and sends the
result back with the chosen apply mode. A patch is inline YAML/JSON or @file;
--patch-file names a file.`,
		Example: `  talosctl -n 10.5.0.2 patch mc --immediate -p '[{"op": "replace", "path": "/machine/kubelet/image", "value": "ghcr.io/siderolabs/kubelet:v1.34.12"}]'
  talosctl -n 10.5.0.2 patch machineconfig -p @patch.yaml --dry-run`,
		Args: machineConfigArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if patchFile != "" {
				patches = append(patches, "@"+patchFile)
			}

			if len(patches) == 0 {
				return errors.New("no patch given: use --patch or --patch-file")
			}

			ps, err := configpatch.LoadAll(patches)
			if err != nil {
				return err
			}

			if _, err := af.request(cmd, nil); err != nil {
				return err
			}

			return g.WithSession(false, func(s *global.Session) error {
				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.ApplyConfiguration, error) {
					current, err := c.MachineConfig(ctx)
					if err != nil {
						return nil, err
					}

					patched, err := configpatch.Apply(current, ps...)
					if err != nil {
						return nil, fmt.Errorf("patch machine config: %w", err)
					}

					req, err := af.request(cmd, patched)
					if err != nil {
						return nil, err
					}

					return c.ApplyConfiguration(ctx, req)
				})

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					node := s.NodeName(r.Node, r.Value.GetMetadata())
					if !af.dryRun {
						fmt.Fprintf(cmd.OutOrStdout(), "patched mc at the node %s\n", node)

						// One line per node, as the seeds show: "Applied
						// configuration ..." says again what that line does.
						// A try's details (when it reverts) still follow.
						if d := r.Value.GetModeDetails(); strings.HasPrefix(d, "Applied configuration with") {
							r.Value.ModeDetails = ""
						}
					}

					printApplyResult(cmd, node, len(results) > 1, af.dryRun, r.Value)
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	af.register(cmd)
	cmd.Flags().StringArrayVarP(&patches, "patch", "p", nil, "the patch to be applied to the resource file, use @file to read a patch from file")
	cmd.Flags().StringVar(&patchFile, "patch-file", "", "a file containing a patch to be applied to the resource")

	return cmd
}

// editHeader opens the file the editor shows, as kubectl and talosctl do.
func editHeader(node string) string {
	return fmt.Sprintf(`# Editing MachineConfigs.config.talos.dev/%s at %q node
# Please edit the object below. Lines beginning with a '#' will be ignored,
# and an empty file will abort the edit. If an error occurs while saving this file will be
# reopened with the relevant failures.
#
`, client.ActiveConfigID, node)
}

// stripHeader drops the leading comment block: the header and any error
// report. Comments inside the config are the user's and stay.
func stripHeader(text []byte) []byte {
	lines := strings.SplitAfter(string(text), "\n")

	i := 0
	for i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
		i++
	}

	return []byte(strings.Join(lines[i:], ""))
}

// errorHeader is an apply failure as comment lines above the config.
func errorHeader(err error) string {
	var sb strings.Builder

	sb.WriteString("# The config could not be applied:\n")

	for line := range strings.SplitSeq(strings.TrimRight(err.Error(), "\n"), "\n") {
		sb.WriteString("# " + line + "\n")
	}

	sb.WriteString("#\n")

	return sb.String()
}

func NewEditCommand(g *global.Args) *cobra.Command {
	var af applyFlags

	cmd := &cobra.Command{
		Use:   "edit <type> [<id>]",
		Short: "Edit a resource from the default editor.",
		Long: `Opens each node's machine config in $TALOS_EDITOR, then $EDITOR, then vi, and
applies the result with the chosen mode. An unchanged or empty file is not
applied. When the node refuses the config, the editor reopens with the error
on top; the edits are kept in a temporary file that is not removed until they
are applied.`,
		Example: `  talosctl -n 10.5.0.2 edit machineconfig
  talosctl -n 10.5.0.2 edit mc --immediate`,
		Args: machineConfigArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := af.request(cmd, nil); err != nil {
				return err
			}

			return g.WithSession(false, func(s *global.Session) error {
				nodes := s.Nodes
				if len(nodes) == 0 {
					nodes = []string{""}
				}

				failed := false

				// One node at a time: each gets its own editor session.
				for _, node := range nodes {
					ctx := context.WithValue(client.WithNode(cmd.Context(), node), global.NodeKey{}, node)

					if err := editNode(ctx, cmd, g, s, &af, node); err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), (&client.NodeError{Node: node, Err: err}).Error())

						failed = true
					}
				}

				if failed {
					return &global.ExitError{Code: 1}
				}

				return nil
			})
		},
	}

	af.register(cmd)

	return cmd
}

func editNode(ctx context.Context, cmd *cobra.Command, g *global.Args, s *global.Session, af *applyFlags, node string) error {
	c := s.Client(node)

	current, err := c.MachineConfig(ctx)
	if err != nil {
		return err
	}

	name := s.NodeName(node, nil)

	f, err := os.CreateTemp("", "talosctl-edit-*.yaml")
	if err != nil {
		return fmt.Errorf("edit: %w", err)
	}

	path := f.Name()
	f.Close()

	keep := func(err error) error {
		fmt.Fprintf(cmd.ErrOrStderr(), "A copy of your changes has been stored to %q\n", path)
		return err
	}

	content := []byte(editHeader(name) + string(current))

	var (
		lastAttempt []byte
		lastErr     error
	)

	for {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			return keep(fmt.Errorf("edit: %w", err))
		}

		if err := runEditor(cmd, g, path); err != nil {
			return keep(err)
		}

		edited, err := os.ReadFile(path)
		if err != nil {
			return keep(fmt.Errorf("edit: %w", err))
		}

		body := stripHeader(edited)

		switch {
		case len(bytes.TrimSpace(body)) == 0:
			os.Remove(path)
			fmt.Fprintln(cmd.ErrOrStderr(), "Apply was skipped: empty file.")

			return nil
		case bytes.Equal(bytes.TrimSpace(body), bytes.TrimSpace(current)):
			os.Remove(path)
			fmt.Fprintln(cmd.ErrOrStderr(), "Apply was skipped: no changes detected.")

			return nil
		case lastAttempt != nil && bytes.Equal(body, lastAttempt):
			// Saved again without touching the failed attempt: the user
			// gives up; their edits stay in the file. The node's reason
			// is repeated, for editors that never showed the file (a
			// script, an editor that failed to open).
			return keep(fmt.Errorf("edit cancelled, no valid changes were saved: %s", lastErr))
		}

		req, err := af.request(cmd, body)
		if err != nil {
			return keep(err)
		}

		reply, err := c.ApplyConfiguration(ctx, req)
		if err == nil {
			os.Remove(path)
			printApplyResult(cmd, name, false, af.dryRun, reply)

			return nil
		}

		// Reopen with the error on top of the user's own text, kubectl-style.
		lastAttempt, lastErr = body, errors.New(client.Message(err))
		content = []byte(editHeader(name) + errorHeader(lastErr) + string(body))
	}
}

// runEditor opens path in $TALOS_EDITOR, $EDITOR or vi. The editor value
// may carry arguments ("code --wait"), so it runs through the shell.
func runEditor(cmd *cobra.Command, g *global.Args, path string) error {
	editor := "vi"

	for _, env := range []string{"TALOS_EDITOR", "EDITOR"} {
		if v := strings.TrimSpace(g.Env.Getenv(env)); v != "" {
			editor = v
			break
		}
	}

	c := exec.CommandContext(cmd.Context(), "sh", "-c", editor+` "$1"`, "sh", filepath.Clean(path))
	c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()

	if err := c.Run(); err != nil {
		return fmt.Errorf("editor %q: %w", editor, err)
	}

	return nil
}
