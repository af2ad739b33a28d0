package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/talosbox/talosbox/configs/kubeflags"
)

// helpTimeout bounds one component's --help; it prints and exits at once.
const helpTimeout = time.Minute

// writeKubeFlags records the flags each component of the Kubernetes binary
// bin (release version, "1.34.12") accepts, as its --help lists them, in
// dir/v<version>.json for configs/kubeflags: the lists come from the very
// binaries the node runs, never from a hand-written table. The file is
// replaced atomically, and only when its content changes, so a rerun
// leaves the tree clean.
// Flags --help hides (hidden: a component's deprecated flags, which it
// still accepts) come from the binary's own dump and are marked deprecated.
func (b *builder) writeKubeFlags(ctx context.Context, version, bin, dir string, hidden map[string]map[string]string) error {
	comps := map[string][]kubeflags.Flag{}

	for _, c := range kubeflags.Components {
		help, err := componentHelp(ctx, bin, c)
		if err != nil {
			return fmt.Errorf("kubeflags %s: %w", version, err)
		}

		flags, err := kubeflags.ParseHelp(help)
		if err != nil {
			return fmt.Errorf("kubeflags %s: %s --help: %w", version, c, err)
		}

		listed := map[string]bool{}
		for _, f := range flags {
			listed[f.Name] = true
		}

		for _, name := range slices.Sorted(maps.Keys(hidden[c])) {
			if !listed[name] {
				flags = append(flags, kubeflags.Flag{Name: name, Type: hidden[c][name], Deprecated: true})
			}
		}

		comps[c] = flags
	}

	data, err := kubeflags.Encode(version, comps)
	if err != nil {
		return err
	}

	path := filepath.Join(dir, "v"+version+".json")

	changed, err := writeAtomic(path, data)
	if err != nil {
		return fmt.Errorf("kubeflags %s: %w", version, err)
	}

	state := "up to date"
	if changed {
		state = "written"
	}

	b.logf("kubeflags %s: %s %s", version, path, state)

	return nil
}

// componentHelp runs the multicall binary as component (argv[0], which it
// dispatches on) with --help, in an empty environment so that nothing of
// the host's (KUBECONFIG, a terminal's width) shapes the output.
func componentHelp(ctx context.Context, bin, component string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, helpTimeout)
	defer cancel()

	var stdout, stderr bytes.Buffer

	cmd := exec.CommandContext(ctx, bin, "--help")
	cmd.Args[0] = component
	cmd.Env = []string{}
	cmd.Dir = os.TempDir()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s --help: %w\n%s", component, err, tail(stderr.Bytes(), 20))
	}

	return stdout.String(), nil
}

// writeAtomic replaces path with data through a temporary file in the same
// directory and a rename, so a reader (git, go:embed) never sees half a
// file; it writes nothing when path already holds data.
func writeAtomic(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}

	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return false, err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op

	if _, err := f.Write(data); err != nil {
		f.Close()
		return false, fmt.Errorf("write %s: %w", f.Name(), err)
	}

	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return false, err
	}

	if err := f.Sync(); err != nil {
		f.Close()
		return false, fmt.Errorf("sync %s: %w", f.Name(), err)
	}

	if err := f.Close(); err != nil {
		return false, err
	}

	if err := os.Rename(f.Name(), path); err != nil {
		return false, fmt.Errorf("replace %s: %w", path, err)
	}

	return true, nil
}

// writeKubeData writes what config validation knows of a Kubernetes
// version from its binary: the flag lists and the config schemas.
func (b *builder) writeKubeData(ctx context.Context, version, bin string) error {
	if b.opts.KubeFlags == "" && b.opts.KubeSchema == "" {
		return nil
	}

	d, err := dumpKube(ctx, version, bin)
	if err != nil {
		return err
	}

	if b.opts.KubeFlags != "" {
		if err := b.writeKubeFlags(ctx, version, bin, b.opts.KubeFlags, d.HiddenFlags); err != nil {
			return err
		}
	}

	if b.opts.KubeSchema != "" {
		return b.writeKubeSchemas(version, d, b.opts.KubeSchema)
	}

	return nil
}
