package machine

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/userfiles"
)

// writeUserFiles makes the node's files what the config's machine.files
// say, and undoes what an earlier config wrote and this one does not
// (userfiles' manifest on STATE): after a fallback, the last good
// config's files are exactly what is there. The CRI's own files (its
// customization part, registry hosts files) are rendered by the CRI
// with the rest of its config (cri.OwnsMachineFile).
func (n *Node) writeUserFiles(loaded loadedConfig, w io.Writer) error {
	var files []configs.MachineFile

	if loaded.cfg.Machine != nil {
		for _, f := range loaded.cfg.Machine.Files {
			if !cri.OwnsMachineFile(f.Path) {
				files = append(files, f)
			}
		}
	}

	root := "/"
	if !n.opts.Platform.IsMetal() {
		// Container mode never writes outside the node's own dirs.
		root = n.opts.Platform.EphemeralDir
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
	}

	if len(files) > 0 {
		fmt.Fprintf(w, "[talos] writing %d machine file(s) under %s\n", len(files), root)
	}

	rep, err := userfiles.Sync(files, userfiles.Options{Root: root, StateDir: n.state.Dir, Config: configHash(loaded.data)})

	for _, l := range []struct {
		what  string
		paths []string
	}{
		{"removed (the config no longer writes them)", rep.Removed},
		{"restored to their original (the config no longer writes them)", rep.Restored},
		{"left as they are: the config no longer writes them, but they changed since it did", rep.LeftAlone},
	} {
		if len(l.paths) > 0 {
			fmt.Fprintf(w, "[talos] machine files %s: %s\n", l.what, strings.Join(l.paths, ", "))
		}
	}

	if rep.Changed() {
		fmt.Fprintf(w, "[talos] machine files: generation %d (%s)\n", rep.Generation, userfiles.ManifestFile)
	}

	return err
}
