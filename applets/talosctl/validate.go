package talosctl

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/configs"
)

func newValidateCommand() *cobra.Command {
	var (
		file, mode string
		strict     bool
	)

	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Validate config",
		Long: `Decode the machine config strictly (an unknown field is an error with its line)
and check it for the given mode, printing every problem at once. Warnings are
printed too; --strict turns them into errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := configs.ParseMode(mode)
			if err != nil {
				return err
			}

			data, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("read config: %w", err)
			}

			cfg, err := configs.Decode(data)
			if err != nil {
				return fmt.Errorf("%s: decode: %w", file, err)
			}

			warnings, err := cfg.Validate(m, configs.WithStrict(strict))
			for _, w := range warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}

			if err != nil {
				var errs *configs.Errors
				if errors.As(err, &errs) {
					return fmt.Errorf("%s is invalid for %s mode:\n%w", file, m, err)
				}

				return err
			}

			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid for %s mode\n", file, m)

			return nil
		},
	}

	cmd.Flags().StringVarP(&file, "config", "c", "", "the path of the config file")
	cmd.Flags().StringVarP(&mode, "mode", "m", "", "the mode to validate the config for (valid values are metal, container, and cloud)")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat validation warnings as errors")
	cmd.MarkFlagRequired("config") //nolint:errcheck
	cmd.MarkFlagRequired("mode")   //nolint:errcheck

	return cmd
}
