package userfiles

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// node is a root and a STATE for Sync, and the configs applied to them.
type node struct {
	t           *testing.T
	root, state string
}

func newNode(t *testing.T) *node {
	return &node{t: t, root: t.TempDir(), state: t.TempDir()}
}

func (n *node) sync(config string, files ...configs.MachineFile) Report {
	n.t.Helper()

	rep, err := Sync(files, Options{Root: n.root, StateDir: n.state, Config: config})
	if err != nil {
		n.t.Fatalf("sync %s: %v", config, err)
	}

	return rep
}

func (n *node) write(rel, data string, mode os.FileMode) {
	n.t.Helper()

	p := filepath.Join(n.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		n.t.Fatal(err)
	}

	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		n.t.Fatal(err)
	}

	if err := os.Chmod(p, mode); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) want(rel, data string, mode os.FileMode) {
	n.t.Helper()

	got, m := readFile(n.t, filepath.Join(n.root, rel))
	if got != data || m != mode {
		n.t.Errorf("%s = %q %v, want %q %v", rel, got, m, data, mode)
	}
}

func (n *node) gone(rel string) {
	n.t.Helper()

	if _, err := os.Lstat(filepath.Join(n.root, rel)); !os.IsNotExist(err) {
		n.t.Errorf("%s is still there (%v)", rel, err)
	}
}

func (n *node) manifest() *Manifest {
	n.t.Helper()

	m, err := LoadManifest(n.state)
	if err != nil {
		n.t.Fatal(err)
	}

	return m
}

func file(p, op, content string) configs.MachineFile {
	return configs.MachineFile{Path: p, Op: op, Content: content}
}

// A config that drops a file removes it, with the directories made for it;
// the manifest says which config and generation wrote what.
func TestDroppedFileRemoved(t *testing.T) {
	n := newNode(t)
	n.write("var/keep/other", "not a config's", 0o644)

	rep := n.sync("a", file("/var/tb/d/f", "create", "x"), file("/var/keep/mine", "create", "m"))
	if !slices.Equal(rep.Written, []string{"/var/tb/d/f", "/var/keep/mine"}) || rep.Generation != 1 {
		t.Errorf("report %+v", rep)
	}

	m := n.manifest()
	if len(m.Files) != 2 || m.Files[1].Path != "/var/tb/d/f" || m.Files[1].Config != "a" || m.Files[1].Generation != 1 ||
		!slices.Equal(m.Files[1].Dirs, []string{"/var/tb", "/var/tb/d"}) || m.Files[1].Original != nil {
		t.Errorf("manifest %+v", m)
	}

	// The same config again changes nothing, not even the generation.
	if rep := n.sync("a", file("/var/tb/d/f", "create", "x"), file("/var/keep/mine", "create", "m")); rep.Changed() || rep.Generation != 1 || len(rep.Kept) != 2 {
		t.Errorf("a second sync of the same config: %+v", rep)
	}

	rep = n.sync("b")
	if !slices.Equal(rep.Removed, []string{"/var/keep/mine", "/var/tb/d/f"}) || rep.Generation != 2 {
		t.Errorf("report %+v", rep)
	}

	n.gone("var/tb")
	n.gone("var/keep/mine")
	n.want("var/keep/other", "not a config's", 0o644)

	if m := n.manifest(); len(m.Files) != 0 || m.Generation != 2 {
		t.Errorf("manifest after the drop: %+v", m)
	}
}

// append and overwrite of a file that was there: the config's content is
// made from the original at every sync (no append twice), and the
// original comes back, mode and all, when the config drops the entry.
func TestOriginalRestored(t *testing.T) {
	n := newNode(t)
	n.write("etc/ssl/certs/ca-certificates", "system CAs\n", 0o444)
	n.write("var/lib/app.conf", "default\n", 0o600)

	files := []configs.MachineFile{
		file("/etc/ssl/certs/ca-certificates", "append", "my CA\n"),
		{Path: "/var/lib/app.conf", Op: "overwrite", Content: "mine\n", Permissions: 0o640},
	}

	for boot := range 3 {
		n.sync("a", files...)
		n.want("etc/ssl/certs/ca-certificates", "system CAs\nmy CA\n", 0o444)
		n.want("var/lib/app.conf", "mine\n", 0o640)

		if boot == 0 {
			if es, _ := os.ReadDir(filepath.Join(n.state, OriginalsDir)); len(es) != 2 {
				t.Errorf("%d originals kept, want 2", len(es))
			}
		}
	}

	rep := n.sync("b")
	if !slices.Equal(rep.Restored, []string{"/etc/ssl/certs/ca-certificates", "/var/lib/app.conf"}) {
		t.Errorf("report %+v", rep)
	}

	n.want("etc/ssl/certs/ca-certificates", "system CAs\n", 0o444)
	n.want("var/lib/app.conf", "default\n", 0o600)

	if es, _ := os.ReadDir(filepath.Join(n.state, OriginalsDir)); len(es) != 0 {
		t.Errorf("originals left after the restore: %v", es)
	}
}

// A file that changed since the config wrote it (a reboot reset the
// tmpfs it is on to a newer image's, someone edited it) is not the
// config's: an append starts from what is there now, and a drop leaves
// it.
func TestChangedSinceWritten(t *testing.T) {
	n := newNode(t)
	n.write("etc/ssl/certs/ca-certificates", "old image\n", 0o644)

	appendCA := file("/etc/ssl/certs/ca-certificates", "append", "my CA\n")
	n.sync("a", appendCA)

	// The next boot's image.
	n.write("etc/ssl/certs/ca-certificates", "new image\n", 0o644)
	n.sync("a", appendCA)
	n.want("etc/ssl/certs/ca-certificates", "new image\nmy CA\n", 0o644)

	n.sync("b")
	n.want("etc/ssl/certs/ca-certificates", "new image\n", 0o644)

	n.sync("c", file("/var/x", "create", "x"))
	n.write("var/x", "edited\n", 0o644)

	if rep := n.sync("d"); !slices.Equal(rep.LeftAlone, []string{"/var/x"}) || len(rep.Removed) != 0 {
		t.Errorf("report %+v", rep)
	}

	n.want("var/x", "edited\n", 0o644)
}

// A symbolic link create replaced comes back when the config drops it.
func TestSymlinkRestored(t *testing.T) {
	n := newNode(t)
	mkdir(t, n.root, "var/lib")
	symlink(t, "real.conf", n.root, "var/lib/app.conf")

	n.sync("a", file("/var/lib/app.conf", "create", "mine"))
	n.want("var/lib/app.conf", "mine", 0o644)

	n.sync("b")

	if got, err := os.Readlink(filepath.Join(n.root, "var/lib/app.conf")); err != nil || got != "real.conf" {
		t.Errorf("link = %q (%v)", got, err)
	}
}

// A file the config drops goes before the config's new files are
// written: it may be in their way. A directory that is no config's in
// the way of a file fails that file alone, and the manifest is left
// consistent.
func TestDropsMakeRoom(t *testing.T) {
	n := newNode(t)
	n.sync("a", file("/var/tb/d/f", "create", "x"))
	n.sync("b", file("/var/tb/d", "create", "now a file"))
	n.want("var/tb/d", "now a file", 0o644)

	mkdir(t, n.root, "var/stray/dir")

	_, err := Sync([]configs.MachineFile{file("/var/tb/d", "create", "now a file"), file("/var/stray/dir", "overwrite", "y")}, Options{Root: n.root, StateDir: n.state, Config: "c"})
	if err == nil || err.Error() != "machine.files[1]: /var/stray/dir: a directory stands there: not a file a config can replace and restore" {
		t.Fatalf("error = %v", err)
	}

	if m := n.manifest(); len(m.Files) != 1 || m.Files[0].Path != "/var/tb/d" {
		t.Errorf("manifest %+v", m)
	}

	// What b wrote is still b's to remove.
	n.sync("d")
	n.gone("var/tb")
}

// A file the config cannot write this time stays on record: what an
// earlier config wrote there is still to be undone.
func TestFailedWriteKeepsRecord(t *testing.T) {
	n := newNode(t)
	n.sync("a", file("/var/a/f", "create", "x"))

	// /var/a/f's directory replaced by a file: the config's write fails.
	if err := os.RemoveAll(filepath.Join(n.root, "var/a")); err != nil {
		t.Fatal(err)
	}

	mkdir(t, n.root, "var/a/f")

	if _, err := Sync([]configs.MachineFile{file("/var/a/f", "create", "y")}, Options{Root: n.root, StateDir: n.state, Config: "b"}); err == nil {
		t.Fatal("a directory in the way was written over")
	}

	if m := n.manifest(); len(m.Files) != 1 || m.Files[0].Path != "/var/a/f" || m.Files[0].Config != "a" {
		t.Errorf("manifest %+v", m)
	}
}
