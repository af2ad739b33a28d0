package machine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// ExtensionStatusController publishes the system extensions the node
// booted with: the manifests the initramfs builder keeps in
// /usr/local/etc/talosbox/extensions (initramfs.ExtensionsDir), one
// ExtensionStatus each, as Talos lists its extension layers. They change
// only with an upgrade, so they are read once.
type ExtensionStatusController struct {
	// Dir holds the manifests; /usr/local/etc/talosbox/extensions when
	// empty.
	Dir string
}

func (*ExtensionStatusController) Name() string { return "runtime.ExtensionStatusController" }

func (*ExtensionStatusController) Inputs() []bus.Input { return nil }

func (*ExtensionStatusController) Outputs() []bus.Output {
	return []bus.Output{{Type: runtime.ExtensionStatusType}}
}

func (c *ExtensionStatusController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	dir := c.Dir
	if dir == "" {
		dir = "/usr/local/etc/talosbox/extensions"
	}

	exts, err := ReadExtensions(dir)
	if err != nil {
		return err
	}

	want := map[string]runtime.ExtensionStatusSpec{}
	for i, e := range exts {
		want[strconv.Itoa(i)] = e
	}

	if err := bus.SyncOutputs(ctx, r, c.Name(), runtime.NamespaceRuntime, runtime.ExtensionStatusType, want); err != nil {
		return err
	}

	<-ctx.Done()

	return nil
}

// ReadExtensions reads the extension manifests in dir, in name order. No
// directory is no extensions.
func ReadExtensions(dir string) ([]runtime.ExtensionStatusSpec, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("extensions: %w", err)
	}

	var out []runtime.ExtensionStatusSpec

	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok || e.IsDir() {
			continue
		}

		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("extensions: %w", err)
		}

		var m struct {
			Metadata runtime.ExtensionMetadata `yaml:"metadata"`
		}

		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("extensions: %s: %w", e.Name(), err)
		}

		out = append(out, runtime.ExtensionStatusSpec{Image: name + ".sqsh", Metadata: m.Metadata})
	}

	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Name < out[j].Metadata.Name })

	return out, nil
}
