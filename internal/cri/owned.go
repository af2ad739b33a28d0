package cri

import (
	"path"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render/layout"
)

// The machine.files the CRI owns: the customization part and the
// registry hosts files. They are not written where machine.files writes
// (internal/userfiles) but rendered with the rest of the CRI's config
// (Render), from the config at hand: so they land where this node's
// containerd reads them (under Runtime.Prefix; a Docker node's userfiles
// write under EPHEMERAL), a config that drops one drops its file, and a
// config the node falls back from leaves none behind.
var (
	// CustomizationPartPath is where machine.files puts the part.
	CustomizationPartPath = path.Join(layout.CRIConfDir, CustomizationPartName)
	// UserHostsDir is where machine.files puts registry hosts files, as
	// on Talos (where it is the CRI's config_path). Here containerd reads
	// HostsDir: what machine.files places under UserHostsDir is rendered
	// into HostsDir, beside the tree machine.registries makes.
	UserHostsDir = path.Join(layout.CRIConfDir, "hosts")
)

// OwnsMachineFile says whether the CRI renders the machine file at p
// (a config's path) rather than internal/userfiles writing it.
func OwnsMachineFile(p string) bool {
	p = path.Clean(p)

	return p == CustomizationPartPath || strings.HasPrefix(p, UserHostsDir+"/")
}

// Landed is the content machine.files leave at p (a clean path) on a
// node where nothing was there before: create and overwrite set it,
// append adds to it. last is the index of the last entry that wrote it,
// mode its permissions (DefaultFileMode when none is given); ok is false
// when no entry writes p.
func Landed(files []configs.MachineFile, p string) (data []byte, last int, ok bool) {
	for i, f := range files {
		if path.Clean(f.Path) != p {
			continue
		}

		switch f.Op {
		case "append":
			data = append(data, f.Content...)
		default:
			data = []byte(f.Content)
		}

		last, ok = i, true
	}

	return slices.Clip(data), last, ok
}

// UserHostsFile is a registry hosts tree file machine.files gives.
type UserHostsFile struct {
	File
	// Index is the last machine.files entry that writes it.
	Index int
}

// UserHostsFiles are the files machine.files places under UserHostsDir,
// relative to it, in path order.
func UserHostsFiles(files []configs.MachineFile) []UserHostsFile {
	var paths []string

	for _, f := range files {
		if p := path.Clean(f.Path); strings.HasPrefix(p, UserHostsDir+"/") && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}

	slices.Sort(paths)

	out := make([]UserHostsFile, 0, len(paths))

	for _, p := range paths {
		data, i, _ := Landed(files, p)
		out = append(out, UserHostsFile{File: File{Path: strings.TrimPrefix(p, UserHostsDir+"/"), Mode: secretMode, Data: data}, Index: i})
	}

	return out
}
