package userfiles

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
)

// Report says what a Sync did, by path.
type Report struct {
	// Generation is the manifest's after the sync.
	Generation int
	// Written were (re)written; Kept already were as the config says.
	Written, Kept []string
	// Removed and Restored were dropped by the config: removed, or given
	// their original back.
	Removed, Restored []string
	// LeftAlone were dropped by the config but changed since it wrote
	// them: they are no longer its to remove.
	LeftAlone []string
}

// Changed says whether the sync changed a file.
func (r Report) Changed() bool {
	return len(r.Written)+len(r.Removed)+len(r.Restored) > 0
}

// Sync makes the node's files what files say, in order: create and
// overwrite set a file (replacing it atomically), append adds to it,
// creating it when missing. With Options.StateDir, it also undoes what
// an earlier config wrote and this one does not (see the manifest), and
// an append adds to the file as it was before any config, so a sync is
// the same at every boot. Every file that can be written is; the errors
// of the others are returned together, each naming its entry and file.
//
// Writes cannot leave the allowed place they name, even through symbolic
// links: each one happens through a handle on that place's directory
// (os.Root, which resolves every component with openat and refuses
// symlinks that lead out or are absolute). A symbolic link where the file
// goes is replaced by create and overwrite (and put back when the config
// drops the file) and refused by append; a directory or device there is
// refused.
func Sync(files []configs.MachineFile, opts Options) (Report, error) {
	root := opts.Root
	if root == "" {
		root = "/"
	}

	if !path.IsAbs(root) {
		return Report{}, fmt.Errorf("write machine files: root %q is not an absolute path", root)
	}

	allowed := opts.Allowed
	if len(allowed) == 0 {
		allowed = DefaultAllowed
	}

	for _, a := range allowed {
		if !path.IsAbs(a) || a == "/" || path.Clean(a) != strings.TrimSuffix(a, "/") {
			return Report{}, fmt.Errorf("write machine files: allowed entry %q must be a clean absolute path other than /", a)
		}
	}

	old := &Manifest{}

	if opts.StateDir != "" {
		m, err := LoadManifest(opts.StateDir)
		if err != nil {
			return Report{}, err
		}

		// Written under another root: not files of this one.
		if m.Root == "" || m.Root == root {
			old = m
		}
	}

	if len(files) == 0 && len(old.Files) == 0 {
		return Report{Generation: old.Generation}, nil
	}

	r, err := os.OpenRoot(root)
	if err != nil {
		return Report{}, fmt.Errorf("write machine files: %w", err)
	}
	defer r.Close()

	s := &syncer{r: r, opts: opts, old: old, next: &Manifest{Generation: old.Generation, Root: root}}

	wants := s.plan(files, allowed)

	s.runDrops()
	s.planWrites(wants)
	s.runWrites()

	s.report.Generation = s.next.Generation

	return s.report, errors.Join(s.errs...)
}

// want is one file the config writes: its entries, in order.
type want struct {
	path  string
	pl    place
	first int // index of its first entry, for messages
	ops   []configs.MachineFile
}

// job is what a sync does to one file.
type job struct {
	w    *want // nil: a file the config dropped
	pl   place
	prev *Entry // what the manifest said
	ours bool   // the file is as this package left it

	data  []byte
	mode  os.FileMode
	write bool
	entry Entry
}

type syncer struct {
	r    *os.Root
	opts Options
	old  *Manifest
	next *Manifest

	jobs    []*job
	keep    []Entry // entries carried over untouched
	dropped bool    // a drop changed the disk
	report  Report
	errs    []error
}

func (s *syncer) fail(index int, p string, err error) {
	s.errs = append(s.errs, fmt.Errorf("machine.files[%d]: %s: %w", index, p, err))
}

// plan reads the config's entries and decides what to drop; the writes
// are planned once the drops are done (planWrites), since a dropped file
// may stand where a new one goes.
func (s *syncer) plan(files []configs.MachineFile, allowed []string) []*want {
	var wants []*want

	byPath := map[string]*want{}
	refused := map[string]bool{} // named, but an entry cannot be written: left as it is

	for i, f := range files {
		pl, err := locate(f.Path, allowed)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("machine.files[%d]: %w", i, err))

			continue
		}

		p := path.Clean(f.Path)

		if err := checkEntry(f); err != nil {
			s.fail(i, f.Path, err)
			refused[p] = true

			continue
		}

		w := byPath[p]
		if w == nil {
			w = &want{path: p, pl: pl, first: i}
			byPath[p] = w
			wants = append(wants, w)
		}

		w.ops = append(w.ops, f)
	}

	for _, w := range wants {
		if refused[w.path] {
			w.ops = nil // half a file is not written
		}
	}

	for _, e := range s.old.Files {
		if refused[e.Path] {
			s.keep = append(s.keep, e)

			continue
		}

		if byPath[e.Path] != nil {
			continue // planned above
		}

		pl, err := locate(e.Path, allowed)
		if err != nil {
			// No longer a place files go: not this sync's to touch.
			s.report.LeftAlone = append(s.report.LeftAlone, e.Path)

			continue
		}

		cur, err := inspect(s.r, pl)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("%s (dropped by the config): %w", e.Path, err))
			s.keep = append(s.keep, e)

			continue
		}

		prev := e
		j := &job{pl: pl, prev: &prev, ours: slices.Contains(e.Written, cur.hash())}

		switch {
		case cur.kind == absent:
			j.write = len(e.Dirs) > 0 // only directories to tidy
		case j.ours:
			j.write = true
		default:
			s.report.LeftAlone = append(s.report.LeftAlone, e.Path)

			continue
		}

		s.jobs = append(s.jobs, j)
	}

	return wants
}

// planWrites plans the config's files, after the drops.
func (s *syncer) planWrites(wants []*want) {
	for _, w := range wants {
		if len(w.ops) == 0 {
			continue
		}

		if j, err := s.planWrite(w); err != nil {
			s.fail(w.first, w.path, err)

			if prev := s.old.entry(w.path); prev != nil {
				s.next.Files = append(s.next.Files, *prev)
			}
		} else {
			s.jobs = append(s.jobs, j)
		}
	}
}

// checkEntry refuses what cannot be written whatever the node holds.
func checkEntry(f configs.MachineFile) error {
	switch f.Op {
	case "create", "append", "overwrite":
	default:
		return fmt.Errorf("unsupported op %q (expected create, append or overwrite)", f.Op)
	}

	_, err := fileMode(f.Permissions)

	return err
}

// planWrite decides one file's content and records its original.
func (s *syncer) planWrite(w *want) (*job, error) {
	cur, err := inspect(s.r, w.pl)
	if err != nil {
		return nil, err
	}

	j := &job{w: w, pl: w.pl, prev: s.old.entry(w.path)}
	j.ours = j.prev != nil && slices.Contains(j.prev.Written, cur.hash())

	base := cur

	var orig *Original

	if j.ours {
		orig = j.prev.Original

		if base, err = s.originalState(orig); err != nil {
			return nil, err
		}
	} else {
		if cur.kind == other {
			return nil, fmt.Errorf("%s stands there: not a file a config can replace and restore", cur.what)
		}

		if orig, err = s.capture(cur); err != nil {
			return nil, err
		}
	}

	j.data, j.mode, err = content(base, w.ops)
	if err != nil {
		return nil, err
	}

	h := hashOf(regular, j.data, "")

	j.entry = Entry{Path: w.path, Generation: s.old.Generation + 1, Config: s.opts.Config, Written: []string{h}, Original: orig}
	j.write = cur.kind != regular || cur.hash() != h || cur.mode != j.mode

	if j.ours {
		j.entry.Dirs = j.prev.Dirs

		if !j.write {
			j.entry.Generation, j.entry.Config = j.prev.Generation, j.prev.Config
		}
	}

	return j, nil
}

// content applies ops to base.
func content(base state, ops []configs.MachineFile) ([]byte, os.FileMode, error) {
	data, mode, exists := slices.Clone(base.data), base.mode, base.kind == regular

	for _, f := range ops {
		m, _ := fileMode(f.Permissions) // checked by checkEntry

		switch {
		case f.Op != "append":
			data, mode, exists = []byte(f.Content), m, true
		case base.kind == link && !exists:
			return nil, 0, errors.New("a symbolic link stands there: append does not follow it")
		case !exists:
			data, mode, exists = []byte(f.Content), m, true
		default:
			data = append(data, f.Content...)

			if f.Permissions != 0 {
				mode = m
			}
		}
	}

	return data, mode, nil
}

// capture keeps what a file was before a config first wrote it.
func (s *syncer) capture(cur state) (*Original, error) {
	switch cur.kind {
	case regular:
		if s.opts.StateDir == "" {
			return &Original{Mode: modeBits(cur.mode)}, nil
		}

		sum, err := keepOriginal(s.opts.StateDir, cur.data)
		if err != nil {
			return nil, err
		}

		return &Original{SHA256: sum, Mode: modeBits(cur.mode)}, nil
	case link:
		return &Original{Symlink: cur.target}, nil
	}

	return nil, nil
}

// originalState is an original as the state it restores.
func (s *syncer) originalState(o *Original) (state, error) {
	switch {
	case o == nil:
		return state{kind: absent}, nil
	case o.Symlink != "":
		return state{kind: link, target: o.Symlink}, nil
	}

	data, err := loadOriginal(s.opts.StateDir, o.SHA256)
	if err != nil {
		return state{}, err
	}

	mode, _ := fileMode(configs.FileMode(o.Mode))

	return state{kind: regular, data: data, mode: mode}, nil
}

// manifestsEqual compares two manifests' content.
func manifestsEqual(a, b *Manifest) bool {
	if a.Generation != b.Generation || a.Root != b.Root || len(a.Files) != len(b.Files) {
		return false
	}

	for i := range a.Files {
		x, y := a.Files[i], b.Files[i]
		if x.Path != y.Path || x.Generation != y.Generation || x.Config != y.Config ||
			!slices.Equal(x.Written, y.Written) || !slices.Equal(x.Dirs, y.Dirs) ||
			(x.Original == nil) != (y.Original == nil) || x.Original != nil && *x.Original != *y.Original {
			return false
		}
	}

	return true
}
