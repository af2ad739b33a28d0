package global

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

// KubeconfigTarget is where the kubeconfig goes, and whether it is merged.
func KubeconfigTarget(args []string, merge bool) (string, bool, error) {
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

// WriteKubeconfig writes data to path whole, or merges it into what path
// holds. Files are 0600: a kubeconfig is a credential.
func WriteKubeconfig(out io.Writer, path string, data []byte, merge, force bool) error {
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
