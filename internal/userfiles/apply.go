package userfiles

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// runDrops undoes the files the config dropped. The manifest as it is
// lists them already, as they are: a crash part way through leaves
// files it knows, removed or not.
func (s *syncer) runDrops() {
	s.next.Files = slices.Clone(s.keep)

	for _, j := range s.jobs {
		s.drop(j)
	}

	s.dropped = slices.ContainsFunc(s.jobs, func(j *job) bool { return j.write })
	s.jobs = nil
}

// runWrites writes down what is about to change, changes it, then
// records what it changed.
func (s *syncer) runWrites() {
	changes := s.dropped || slices.ContainsFunc(s.jobs, func(j *job) bool { return j.write })

	if changes {
		s.next.Generation = s.old.Generation + 1
	}

	if s.opts.StateDir != "" && changes {
		// Before the disk changes: a crash part way through leaves files
		// the manifest knows, as written by the last sync or this one.
		pending := &Manifest{Generation: s.next.Generation, Root: s.next.Root, Files: slices.Clone(s.next.Files)}

		for _, j := range s.jobs {
			pending.Files = append(pending.Files, j.pendingEntry())
		}

		if err := pending.save(s.opts.StateDir); err != nil {
			s.errs = append(s.errs, err)

			return
		}
	}

	for _, j := range s.jobs {
		s.put(j)
	}

	slices.SortFunc(s.next.Files, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })

	if s.opts.StateDir == "" {
		return
	}

	if changes || !manifestsEqual(s.old, s.next) {
		if err := s.next.save(s.opts.StateDir); err != nil {
			s.errs = append(s.errs, err)

			return
		}
	}

	if err := s.next.pruneOriginals(s.opts.StateDir); err != nil {
		s.errs = append(s.errs, fmt.Errorf("machine files: prune originals: %w", err))
	}
}

// pendingEntry is the entry while the sync runs: either state is ours.
func (j *job) pendingEntry() Entry {
	if j.w == nil {
		return *j.prev
	}

	e := j.entry
	if j.ours {
		e.Written = append(slices.Clone(j.prev.Written), e.Written...)
	}

	return e
}

// drop undoes a file the config no longer writes.
func (s *syncer) drop(j *job) {
	e := *j.prev

	err := withPlace(s.r, j.pl, false, func(dir *os.Root) error {
		if !j.ours {
			return nil // already gone
		}

		if e.Original == nil {
			return removeFile(dir, j.pl.name)
		}

		st, err := s.originalState(e.Original)
		if err != nil {
			return err
		}

		if st.kind == link {
			return replaceLink(dir, j.pl.name, st.target)
		}

		return put(dir, j.pl.name, st.data, st.mode)
	})
	if err != nil {
		s.errs = append(s.errs, fmt.Errorf("%s (dropped by the config): %w", e.Path, err))
		s.next.Files = append(s.next.Files, e)

		return
	}

	switch {
	case !j.ours:
	case e.Original == nil:
		s.report.Removed = append(s.report.Removed, e.Path)
	default:
		s.report.Restored = append(s.report.Restored, e.Path)
	}

	if e.Original == nil {
		removeEmptyDirs(s.r, e.Dirs)
	}
}

// put writes one file the config writes.
func (s *syncer) put(j *job) {
	if !j.write {
		s.report.Kept = append(s.report.Kept, j.w.path)
		s.next.Files = append(s.next.Files, j.entry)

		return
	}

	e := j.entry

	made, err := mkdirs(s.r, "/", j.pl.dir)
	if err == nil {
		err = withPlace(s.r, j.pl, true, func(dir *os.Root) error {
			m, err := mkdirs(dir, "/"+j.pl.dir, path.Dir(j.pl.name))
			made = append(made, m...)

			if err != nil {
				return err
			}

			return put(dir, j.pl.name, j.data, j.mode)
		})
	}

	e.Dirs = append(e.Dirs, made...)

	if err != nil {
		s.fail(j.w.first, j.w.path, err)

		// What the file may now be, as far as the manifest can tell.
		pe := j.pendingEntry()
		pe.Dirs = e.Dirs
		s.next.Files = append(s.next.Files, pe)

		return
	}

	s.report.Written = append(s.report.Written, j.w.path)
	s.next.Files = append(s.next.Files, e)
}
