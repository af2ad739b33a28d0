package talos

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// NewMetaCommand is Talos's `talosctl meta write|delete`. --insecure is
// persistent, as in Talos 1.11, so that it follows the subcommand.
func NewMetaCommand(g *global.Args) *cobra.Command {
	var insecure bool

	cmd := &cobra.Command{
		Use:   "meta",
		Short: "Write and delete keys in the META partition",
		Long: `META is a small key-value store on the system disk of a metal node that
survives reinstalls and upgrades. Keys are bytes, written as numbers
(0x0c or 12); Talos uses 0x06-0x11, and 0x0c-0x0e are left for users.
Writing and deleting need the os:admin or os:meta:writer role.`,
		Args: cobra.NoArgs,
	}

	cmd.PersistentFlags().BoolVarP(&insecure, "insecure", "i", false, "write|delete meta using the insecure (encrypted with no auth) maintenance service")

	write := &cobra.Command{
		Use:     "write key value",
		Short:   "Write a key-value pair to the META partition.",
		Example: `  talosctl -n 10.5.0.2 meta write 0x0c "my value"`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := parseMetaKey(args[0])
			if err != nil {
				return err
			}

			return metaCall(cmd, g, insecure, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Machine.MetaWrite(ctx, &machine.MetaWriteRequest{Key: key, Value: []byte(args[1])})
				if err != nil {
					return err
				}

				_, err = client.FirstMessage(resp.GetMessages())

				return err
			})
		},
	}

	del := &cobra.Command{
		Use:     "delete key",
		Short:   "Delete a key from the META partition.",
		Example: `  talosctl -n 10.5.0.2 meta delete 0x0c`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := parseMetaKey(args[0])
			if err != nil {
				return err
			}

			return metaCall(cmd, g, insecure, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Machine.MetaDelete(ctx, &machine.MetaDeleteRequest{Key: key})
				if err != nil {
					return err
				}

				_, err = client.FirstMessage(resp.GetMessages())

				return err
			})
		},
	}

	cmd.AddCommand(write, del)

	return cmd
}

// parseMetaKey reads a key as Talos does (strconv base 0: 0x0c, 12, 0o14),
// before any node is dialled.
func parseMetaKey(s string) (uint32, error) {
	k, err := strconv.ParseUint(s, 0, 8)
	if err != nil {
		return 0, fmt.Errorf("invalid META key %q: want a number from 0x01 to 0xff", s)
	}

	if k == 0 {
		return 0, fmt.Errorf("invalid META key %q: 0x00 marks the end of the records", s)
	}

	return uint32(k), nil
}

// metaCall runs call on every node and reports each node's error.
func metaCall(cmd *cobra.Command, g *global.Args, insecure bool, call func(ctx context.Context, c *client.Client) error) error {
	return g.WithSession(insecure, func(s *global.Session) error {
		results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
			return struct{}{}, call(ctx, c)
		})

		return global.ReportErrors(cmd, results)
	})
}
