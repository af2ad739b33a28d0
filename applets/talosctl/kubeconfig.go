package talosctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

func newKubeconfigCommand(g *GlobalFlags) *cobra.Command {
	var force, merge bool

	var contextName string

	cmd := &cobra.Command{
		Use:   "kubeconfig [local-path]",
		Short: "Download the admin kubeconfig from the node",
		Long: `Download the admin kubeconfig from a control plane node: a fresh client
certificate (CN admin, group system:masters) signed by the cluster CA, for
the cluster's control-plane endpoint.

With no path it is merged into the default kubeconfig ($KUBECONFIG, else
~/.kube/config) as the context admin@<cluster>, which becomes the current
one. A path that is a directory gets a file named kubeconfig in it. With
--merge=false, or when the target does not exist yet, the file is written
whole (an existing file needs --force). When merging, a cluster, user or
context of the same name is replaced with --force and otherwise kept, the new
one getting a numbered name.`,
		Example: `  talosctl -n 10.5.0.2 kubeconfig
  talosctl -n 10.5.0.2 kubeconfig . --merge=false
  talosctl -n 10.5.0.2 kubeconfig ~/lab.kubeconfig --force`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, merging, err := kubeconfigTarget(args, merge)
			if err != nil {
				return err
			}

			return g.withSession(false, func(s *session) error {
				if err := singleNode(s); err != nil {
					return err
				}

				results := fanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) ([]byte, error) {
					return c.Kubeconfig(ctx)
				})

				if err := reportErrors(cmd, results); err != nil {
					return err
				}

				data := results[0].Value
				if contextName != "" {
					if data, err = renameKubeconfigContext(data, contextName); err != nil {
						return err
					}
				}

				return writeKubeconfig(cmd.OutOrStdout(), target, data, merging, force)
			})
		},
	}

	cmd.Flags().BoolVarP(&force, "force", "f", false, "force overwrite of kubeconfig if already present, force overwrite on kubeconfig merge")
	cmd.Flags().BoolVarP(&merge, "merge", "m", true, "merge with existing kubeconfig")
	cmd.Flags().StringVar(&contextName, "force-context-name", "", "force context name for kubeconfig merge")

	return cmd
}

// kubeconfigTarget is where the kubeconfig goes, and whether it is merged.
func kubeconfigTarget(args []string, merge bool) (string, bool, error) {
	if len(args) == 0 {
		if env := os.Getenv("KUBECONFIG"); env != "" {
			return filepath.SplitList(env)[0], merge, nil
		}

		home, err := os.UserHomeDir()
		if err != nil {
			return "", false, fmt.Errorf("kubeconfig: no home directory: give a path")
		}

		return filepath.Join(home, ".kube", "config"), merge, nil
	}

	p := args[0]
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return filepath.Join(p, "kubeconfig"), false, nil
	}

	return p, merge, nil
}

func renameKubeconfigContext(data []byte, name string) ([]byte, error) {
	k, err := kubernetes.ParseKubeconfig(data, "kubeconfig")
	if err != nil {
		return nil, err
	}

	kubernetes.RenameCurrentContext(k, name)

	return kubernetes.MarshalKubeconfig(k)
}

// writeKubeconfig writes data to path whole, or merges it into what path
// holds. Files are 0600: a kubeconfig is a credential.
func writeKubeconfig(out io.Writer, path string, data []byte, merge, force bool) error {
	existing, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		merge = false
	} else if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}

	if !merge {
		if existing != nil && !force {
			return fmt.Errorf("kubeconfig file already exists, use --force to overwrite: %s", path)
		}

		return writeFile0600(path, data)
	}

	cur, err := kubernetes.ParseKubeconfig(existing, path)
	if err != nil {
		return err
	}

	add, err := kubernetes.ParseKubeconfig(data, "the node's kubeconfig")
	if err != nil {
		return err
	}

	renamed := kubernetes.MergeKubeconfig(cur, add, force)
	for _, old := range slices.Sorted(maps.Keys(renamed)) {
		fmt.Fprintf(out, "renamed %q to %q: it exists already in %s (--force replaces it)\n", old, renamed[old], path)
	}

	merged, err := kubernetes.MarshalKubeconfig(cur)
	if err != nil {
		return err
	}

	return writeFile0600(path, merged)
}

func writeFile0600(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}

	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}

	return os.Rename(tmp, path)
}
