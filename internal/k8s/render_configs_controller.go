package k8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// RenderConfigsController writes the admission, audit, authorization and
// scheduler configs under ConfigDir (Talos's
// RenderConfigsStaticPodController); ConfigStatus static-pods carries
// their version, which the apiserver's pod is annotated with.
type RenderConfigsController struct {
	// Root is where absolute paths go ("/" on a node).
	Root string
}

// Name implements bus.Controller.
func (*RenderConfigsController) Name() string { return "k8s.RenderConfigsStaticPodController" }

// Inputs implements bus.Controller.
func (*RenderConfigsController) Inputs() []bus.Input { return []bus.Input{machineConfigInput} }

// Outputs implements bus.Controller.
func (*RenderConfigsController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.ConfigStatusType}}
}

// Run implements bus.Controller.
func (c *RenderConfigsController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		want := map[string]k8s.StatusSpec{}

		if cfg != nil && cfg.IsControlPlane() {
			files, err := render.ConfigFiles(cfg)
			if err == nil {
				err = WriteFiles(c.Root, files, true)
			}

			if err == nil {
				err = ownedDir(filepath.Join(c.root(), constants.AuditDir), constants.APIServerUID)
			}

			if err != nil {
				r.Logger().Error("kubernetes config files", "error", err)
				continue
			}

			want[k8s.StaticPodsStatusID] = k8s.StatusSpec{Ready: true, Version: render.FilesVersion(files)}
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceControlPlane, k8s.ConfigStatusType, want); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

func (c *RenderConfigsController) root() string {
	if c.Root == "" {
		return "/"
	}

	return c.Root
}

// ownedDir makes dir (0700) belong to uid: the apiserver, which runs as
// its own user, writes its audit log there.
func ownedDir(dir string, uid int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}

	if err := os.Chown(dir, uid, uid); err != nil {
		return fmt.Errorf("chown %s: %w", dir, err)
	}

	return nil
}

// WriteFiles writes files under root atomically, only those that
// changed, in directories of mode 0755; with chown each file belongs to
// its UID (the component it is for).
func WriteFiles(root string, files []render.File, chown bool) error {
	if root == "" {
		root = "/"
	}

	for _, f := range files {
		p := filepath.Join(root, f.Path)

		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}

		old, err := os.ReadFile(p)
		if err != nil || string(old) != string(f.Data) {
			if err := atomicfile.Write(p, f.Data, os.FileMode(f.Mode)); err != nil {
				return fmt.Errorf("write %s: %w", f.Path, err)
			}
		}

		if chown {
			if err := os.Chown(p, f.UID, f.UID); err != nil {
				return fmt.Errorf("chown %s: %w", f.Path, err)
			}
		}
	}

	return nil
}
