package configs

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// MachineFilePlaces is where machine.files may write: anywhere under /var
// (the EPHEMERAL partition), the containerd registry hosts files and CRI
// customization part, and the CA bundle that the CA and proxy guides append
// to. An entry ending in "/" allows everything below it; any other entry
// allows that one file. The rest of a node's root is its immutable image:
// a file written there is gone at the next boot, or breaks it.
var MachineFilePlaces = []string{
	"/var/",
	"/etc/cri/conf.d/hosts/",
	"/etc/cri/conf.d/20-customization.part",
	"/etc/ssl/certs/ca-certificates",
}

// MachineFilePlace says where a machine.files path goes: dir is the allowed
// place it is confined to (absolute, without a trailing "/") and name its
// path inside dir. allowed lists the places (MachineFilePlaces when nil).
// It is the one rule for both validation and the boot that writes the
// files (internal/userfiles), so a path validation accepts is one the boot
// writes.
func MachineFilePlace(p string, allowed []string) (dir, name string, err error) {
	if allowed == nil {
		allowed = MachineFilePlaces
	}

	switch {
	case p == "":
		return "", "", errors.New("path is required")
	case !strings.HasPrefix(p, "/"):
		return "", "", fmt.Errorf("path %q is not absolute", p)
	case strings.HasSuffix(p, "/"):
		return "", "", fmt.Errorf("path %q names a directory, not a file", p)
	case strings.ContainsAny(p, "\x00\n"):
		return "", "", fmt.Errorf("path %q contains a NUL or newline", p)
	}

	// Checked on the raw path: path.Clean would quietly resolve
	// "/var/../etc/shadow" into something that looks legitimate.
	for elem := range strings.SplitSeq(p, "/") {
		if elem == ".." {
			return "", "", fmt.Errorf("path %q must not contain \"..\"", p)
		}
	}

	clean := path.Clean(p)

	for _, a := range allowed {
		if d, ok := strings.CutSuffix(a, "/"); ok {
			if n, ok := strings.CutPrefix(clean, a); ok {
				return d, n, nil
			}

			continue
		}

		if clean == a {
			return path.Dir(a), path.Base(a), nil
		}
	}

	return "", "", fmt.Errorf("path %q is not writable: %s", p, describePlaces(allowed))
}

func describePlaces(allowed []string) string {
	var dirs, files []string

	for _, a := range allowed {
		if strings.HasSuffix(a, "/") {
			dirs = append(dirs, a)
		} else {
			files = append(files, a)
		}
	}

	var parts []string
	if len(dirs) > 0 {
		parts = append(parts, "under "+strings.Join(dirs, ", "))
	}

	if len(files) > 0 {
		parts = append(parts, "to "+strings.Join(files, ", "))
	}

	return "files may only be written " + strings.Join(parts, " or ")
}

var fileOps = []string{"create", "append", "overwrite"}

// fileIndex is what the entries so far write: the files, and every
// directory above them, each with the first entry that needs it. Both are
// looked up by path, so a config of many files is checked in linear time
// (configs arrive unauthenticated in maintenance mode).
type fileIndex struct {
	files map[string]int
	dirs  map[string]int
}

func (v *validator) files(files []MachineFile) {
	idx := fileIndex{files: map[string]int{}, dirs: map[string]int{}}

	for i, f := range files {
		fp := indexPath("machine.files", i)

		if !slices.Contains(fileOps, f.Op) {
			v.errorf(fp+".op", "unsupported file op %q (expected create, append or overwrite)", f.Op)
		}

		if _, _, err := MachineFilePlace(f.Path, nil); err != nil {
			v.errorf(fp+".path", "%v", err)
		} else {
			v.fileConflicts(fp, i, files, idx)
		}

		v.criFile(fp, f)

		switch {
		case f.Permissions > 0o7777:
			v.errorf(fp+".permissions", "invalid file permissions 0o%o: only the bits 0o7777 may be set", uint32(f.Permissions))
		case f.Permissions > 0o777:
			// A decimal 644 (0o1204) sets the sticky bit: almost always an
			// octal mode written without its leading zero.
			v.warnf(fp+".permissions", "file permissions 0o%o set setuid, setgid or sticky bits; write octal modes with a leading 0 (0644)", uint32(f.Permissions))
		}
	}
}

// fileConflicts refuses what the boot would fail on between entries: the
// same path created or overwritten twice (the second silently replaces the
// first), and a file whose path another entry needs as a directory.
func (v *validator) fileConflicts(fp string, i int, files []MachineFile, idx fileIndex) {
	f := files[i]
	clean := path.Clean(f.Path)

	if j, dup := idx.files[clean]; dup {
		if f.Op != "append" {
			v.errorf(fp+".path", "%s is already written by machine.files[%d] (op %s): give each file one create or overwrite, then appends", f.Path, j, files[j].Op)
		}

		return
	}

	if j, isDir := idx.dirs[clean]; isDir {
		v.errorf(fp+".path", "%s is a directory of machine.files[%d] (%s): it cannot also be a file", f.Path, j, path.Clean(files[j].Path))
	}

	for dir := path.Dir(clean); dir != "/"; dir = path.Dir(dir) {
		if j, isFile := idx.files[dir]; isFile {
			v.errorf(fp+".path", "%s needs %s to be a directory, but machine.files[%d] writes it as a file", f.Path, dir, j)
		}

		if _, seen := idx.dirs[dir]; !seen {
			idx.dirs[dir] = i
		}
	}

	idx.files[clean] = i
}
