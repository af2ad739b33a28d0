package render

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/sysctl"
	"github.com/talosbox/talosbox/internal/userfiles"
)

// files renders machine.files as they land on a node that had none of
// them: create and overwrite leave their content, append adds to what the
// earlier entries left (on a node, to what the file held).
func (b *builder) files() {
	type landing struct {
		data []byte
		mode fs.FileMode
		op   string
	}

	byPath := map[string]*landing{}

	for i, f := range b.cfg.Machine.Files {
		p := fmt.Sprintf("machine.files[%d]", i)

		// Rendered where the node's containerd reads them (runtime).
		if strings.HasPrefix(path.Clean(f.Path), cri.UserHostsDir+"/") {
			continue
		}

		if !path.IsAbs(f.Path) || slices.Contains(strings.Split(f.Path, "/"), "..") || strings.HasSuffix(f.Path, "/") {
			b.fail(p+".path", "%q is not an absolute path to a file without \"..\"", f.Path)

			continue
		}

		perm := f.Permissions
		if perm == 0 {
			perm = userfiles.DefaultPermissions
		}

		if perm > 0o7777 {
			b.fail(p+".permissions", "0o%o: only the bits 0o7777 may be set", uint32(perm))

			continue
		}

		clean := path.Clean(f.Path)

		l := byPath[clean]
		if l == nil {
			l = &landing{}
			byPath[clean] = l
		}

		if f.Op == "append" {
			l.data = append(l.data, f.Content...)
		} else {
			l.data = []byte(f.Content)
		}

		l.mode, l.op = fileMode(uint32(perm)), f.Op
	}

	appended := 0

	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		l := byPath[p]
		if l.op == "append" {
			appended++
		}

		b.add(Artifact{Path: "fs" + p, NodePath: p, Mode: l.mode, Data: l.data})
	}

	if appended > 0 {
		b.note("machine.files: %d file(s) end with an append, rendered as appended to nothing: a node appends to what the file holds", appended)
	}
}

// fileMode is a config's permission bits as an fs.FileMode.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)

	for bit, flag := range map[uint32]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if m&bit != 0 {
			mode |= flag
		}
	}

	return mode
}

// octal is fileMode undone, for the index.
func octal(mode fs.FileMode) uint32 {
	m := uint32(mode.Perm())

	for bit, flag := range map[uint32]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if mode&flag != 0 {
			m |= bit
		}
	}

	return m
}

// sysctls renders machine.sysctls as the node writes them under
// /proc/sys, in key order.
func (b *builder) sysctls() {
	keys := slices.Sorted(maps.Keys(b.cfg.Machine.Sysctls))
	if len(keys) == 0 {
		return
	}

	var buf bytes.Buffer

	buf.WriteString("# machine.sysctls, written in this order; a metal node first sets Talos's kernel defaults, which these override\n")

	for _, k := range keys {
		p, err := sysctl.Path(k, sysctl.DefaultProcSys)
		if err != nil {
			b.fail(keyPath("machine.sysctls", k), "%v", err)

			continue
		}

		fmt.Fprintf(&buf, "%s = %s\t# %s\n", k, b.cfg.Machine.Sysctls[k], p)
	}

	b.add(Artifact{Path: "sysctls.conf", NodePath: "written under " + sysctl.DefaultProcSys, Data: buf.Bytes()})
}
