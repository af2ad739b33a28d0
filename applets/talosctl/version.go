package talosctl

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/internal/version"
)

func newVersionCommand(_ *GlobalFlags) *cobra.Command {
	var client, short bool

	cmd := &cobra.Command{
		Use:   "version",
		Short: "Prints the version",
		Long:  "Prints the client version and, without --client, the version of each target node.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if short {
				fmt.Fprintf(out, "Client:\n\t%s\n", version.Tag)
			} else {
				fmt.Fprintf(out, "Client:\n%s", version.Block())
			}

			if client {
				return nil
			}

			return errors.New("server version: the node API is not built yet in this talosbox; use --client")
		},
	}

	cmd.Flags().BoolVar(&client, "client", false, "print client version only")
	cmd.Flags().BoolVar(&short, "short", false, "print the short version")

	return cmd
}
