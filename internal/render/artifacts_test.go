package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

func TestWrite(t *testing.T) {
	cp, worker := gen(t)
	dir := filepath.Join(t.TempDir(), "out")

	arts := mustRender(t, cp, render.Options{})
	if err := arts.Write(dir); err != nil {
		t.Fatal(err)
	}

	files := map[string]os.FileMode{}

	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}

		fi, err := d.Info()
		if err != nil {
			return err
		}

		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = fi.Mode().Perm()

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, a := range arts.List {
		if mode, ok := files[a.Path]; !ok || mode != 0o600 {
			t.Errorf("%s: mode %o, written %v", a.Path, mode, ok)
		}

		data, _ := os.ReadFile(filepath.Join(dir, a.Path))
		if string(data) != string(a.Data) {
			t.Errorf("%s differs from its artifact", a.Path)
		}
	}

	if files["."] != 0o700 || files["static-pods"] != 0o700 {
		t.Errorf("directories: %o %o", files["."], files["static-pods"])
	}

	// A worker's render over the control plane's leaves no file of the
	// control plane's behind.
	warts := mustRender(t, worker, render.Options{Mode: configs.ModeContainer})
	if err := warts.Write(dir); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{"static-pods", "manifests", "services/etcd.args"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s of the earlier render stays: %v", p, err)
		}
	}

	if _, err := os.Stat(filepath.Join(dir, "services/kubelet.args")); err != nil {
		t.Error(err)
	}

	// A directory that holds anything else is refused, and left alone.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := warts.Write(other); err == nil || !strings.Contains(err.Error(), "holds no earlier render") {
		t.Errorf("writing into a directory of other files: %v", err)
	}

	if entries, _ := os.ReadDir(other); len(entries) != 1 {
		t.Errorf("the refused directory has %d entries", len(entries))
	}
}

// TestWriteStaysInside: an artifact path that would leave the directory is
// refused.
func TestWriteStaysInside(t *testing.T) {
	for _, p := range []string{"../x", "/etc/x", "a/../../x"} {
		arts := &render.Artifacts{List: []render.Artifact{{Path: p, Data: []byte("x")}}}
		if err := arts.Write(t.TempDir()); err == nil {
			t.Errorf("%s: written", p)
		}
	}
}

// TestInlineManifestNames: names become one file each, whatever they hold.
func TestInlineManifestNames(t *testing.T) {
	cp, _ := gen(t)

	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n"
	cp.Cluster.InlineManifests = []configs.InlineManifest{{Name: "../../etc/passwd", Contents: ns}, {Name: "a/b", Contents: ns}, {Name: "a_b", Contents: ns}}

	arts := mustRender(t, cp, render.Options{})

	for _, p := range []string{"manifests/99-.._.._etc_passwd.yaml", "manifests/99-a_b.yaml"} {
		file(t, arts, p)
	}

	n := 0

	for _, a := range arts.List {
		if strings.HasPrefix(a.Path, "manifests/99-a_b.yaml") {
			n++
		}
	}

	if n != 2 {
		t.Errorf("%d files for the two names that read a_b", n)
	}

	if err := arts.Write(t.TempDir()); err != nil {
		t.Error(err)
	}
}
