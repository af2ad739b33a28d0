package mgmt

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

func NewConfigCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Manage the client configuration file (talosconfig)",
		Long: `Manage the talosconfig: contexts holding endpoints, nodes and credentials.
The file is --talosconfig, then $TALOSCONFIG, then ~/.talos/config; --context
picks a context other than the current one.`,
	}

	cmd.AddCommand(
		newConfigEndpointCommand(g),
		newConfigNodeCommand(g),
		newConfigContextCommand(g),
		newConfigContextsCommand(g),
		newConfigMergeCommand(g),
		newConfigAddCommand(g),
		newConfigRemoveCommand(g),
		newConfigInfoCommand(g),
	)

	return cmd
}

func newConfigEndpointCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:     "endpoint <endpoint>...",
		Aliases: []string{"endpoints"},
		Short:   "Set the endpoint(s) for the current context",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.EditTalosconfig(func(c *talosconfig.Config) error { return c.SetEndpoints(g.Context, args) })
		},
	}
}

func newConfigNodeCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:     "node <endpoint>...",
		Aliases: []string{"nodes"},
		Short:   "Set the node(s) for the current context",
		RunE: func(_ *cobra.Command, args []string) error {
			return g.EditTalosconfig(func(c *talosconfig.Config) error { return c.SetNodes(g.Context, args) })
		},
	}
}

func newConfigContextCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:     "context <context>",
		Aliases: []string{"use-context"},
		Short:   "Set the current context",
		Args:    cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			cfg, err := g.LoadTalosconfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}

			return cfg.Names(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return g.EditTalosconfig(func(c *talosconfig.Config) error { return c.Use(args[0]) })
		},
	}
}

func newConfigContextsCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:     "contexts",
		Aliases: []string{"get-contexts"},
		Short:   "List defined contexts",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.LoadTalosconfig()
			if err != nil {
				return err
			}

			return cfg.WriteContexts(cmd.OutOrStdout())
		},
	}
}

func newConfigMergeCommand(g *global.Args) *cobra.Command {
	return &cobra.Command{
		Use:   "merge <from>",
		Short: "Merge additional contexts from another client configuration file",
		Long:  "Contexts with the same name are renamed while merging configs; the merged file's current context becomes the current one.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, err := talosconfig.Load(args[0])
			if err != nil {
				return err
			}

			if len(from.Contexts) == 0 {
				return fmt.Errorf("%s has no contexts to merge", args[0])
			}

			return g.EditTalosconfig(func(c *talosconfig.Config) error {
				for _, r := range c.Merge(from) {
					fmt.Fprintf(cmd.OutOrStdout(), "renamed talosconfig context %s\n", r)
				}

				return nil
			})
		},
	}
}

func newConfigAddCommand(g *global.Args) *cobra.Command {
	var opts talosconfig.AddOptions

	cmd := &cobra.Command{
		Use:   "add <context>",
		Short: "Add a new context",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.EditTalosconfig(func(c *talosconfig.Config) error { return c.Add(args[0], opts) })
		},
	}

	cmd.Flags().StringVar(&opts.CA, "ca", "", "the path to the CA certificate")
	cmd.Flags().StringVar(&opts.Crt, "crt", "", "the path to the certificate")
	cmd.Flags().StringVar(&opts.Key, "key", "", "the path to the key")

	return cmd
}

func newConfigRemoveCommand(g *global.Args) *cobra.Command {
	var noconfirm bool

	cmd := &cobra.Command{
		Use:   "remove <context>",
		Short: "Remove contexts",
		Long:  "Remove the contexts whose names match the glob pattern. The current context is never removed.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := bufio.NewReader(cmd.InOrStdin())
			confirm := func(name string) bool {
				if noconfirm {
					return true
				}

				fmt.Fprintf(cmd.ErrOrStderr(), "Remove context %q? (y/N): ", name)
				answer, _ := in.ReadString('\n')

				return strings.EqualFold(strings.TrimSpace(answer), "y")
			}

			return g.EditTalosconfig(func(c *talosconfig.Config) error {
				res, err := c.Remove(args[0], confirm)
				if err != nil {
					return err
				}

				if res.SkippedCurrent != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "skipped the current context %q\n", res.SkippedCurrent)
				}

				for _, name := range res.Removed {
					fmt.Fprintf(cmd.OutOrStdout(), "removed context %q\n", name)
				}

				return nil
			})
		},
	}

	cmd.Flags().BoolVarP(&noconfirm, "noconfirm", "y", false, "do not ask for confirmation")

	return cmd
}

func newConfigInfoCommand(g *global.Args) *cobra.Command {
	var output string

	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show information about the current context",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.LoadTalosconfig()
			if err != nil {
				return err
			}

			info, err := cfg.Info(g.Context, time.Now())
			if err != nil {
				return err
			}

			out := cmd.OutOrStdout()

			switch output {
			case "text":
				_, err = fmt.Fprint(out, info.String())
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				err = enc.Encode(info)
			case "yaml":
				err = yaml.NewEncoder(out).Encode(info)
			default:
				err = fmt.Errorf("unknown output format %q: use text, json or yaml", output)
			}

			return err
		},
	}

	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format (json|yaml|text)")

	return cmd
}

func NewConfigNewCommand(g *global.Args) *cobra.Command {
	var (
		roles []string
		ttl   time.Duration
	)

	cmd := &cobra.Command{
		Use:   "new [<path>]",
		Short: "Generate a new client configuration file",
		Long: `Asks the node for a client certificate with the given roles, signed by its OS
CA, and writes a talosconfig (mode 0600) to <path>, ./talosconfig by default.
The endpoints of the current context are kept when the node gives none.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "talosconfig"
			if len(args) == 1 {
				path = args[0]
			}

			if _, err := os.Stat(path); err == nil {
				return fmt.Errorf("config file %q already exists", path)
			}

			req := &machine.GenerateClientConfigurationRequest{Roles: roles, CrtTtl: durationpb.New(ttl)}

			return g.WithSession(false, func(s *global.Session) error {
				if err := global.SingleNode(s); err != nil {
					return err
				}

				results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (*machine.GenerateClientConfiguration, error) {
					resp, err := c.Machine.GenerateClientConfiguration(ctx, req)
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				if err := global.ReportErrors(cmd, results); err != nil {
					return err
				}

				cfg, err := talosconfig.Parse(results[0].Value.GetTalosconfig())
				if err != nil {
					return fmt.Errorf("generated talosconfig: %w", err)
				}

				for _, ctx := range cfg.Contexts {
					if len(ctx.Endpoints) == 0 && s.Shared != nil {
						ctx.Endpoints = append(ctx.Endpoints, s.Shared.Endpoints()...)
					}
				}

				return cfg.Save(path)
			})
		},
	}

	cmd.Flags().StringSliceVar(&roles, "roles", []string{"os:admin"}, "roles")
	cmd.Flags().DurationVar(&ttl, "crt-ttl", 87600*time.Hour, "certificate TTL")

	return cmd
}
