// Package cgroups reads a cgroup v2 hierarchy (as a tar of
// /sys/fs/cgroup, which `talosctl cgroups` copies from a node) into a
// tree and prints it with Talos's presets: one row per cgroup, columns
// of its controllers' values.
package cgroups

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Node is one cgroup: its files' contents, by name (memory.current, ...).
type Node struct {
	Name     string
	Path     string
	Parent   *Node
	Children []*Node
	Files    map[string]string
}

// ErrNotV2 is returned for a hierarchy that is not cgroup v2 (no
// cgroup.controllers at its root).
var ErrNotV2 = errors.New("not a cgroup v2 hierarchy")

// FromTar builds the tree from a tar of the hierarchy's root. base is the
// directory the archive holds the hierarchy in ("cgroup" for a Copy of
// /sys/fs/cgroup, whose names are relative to the root's parent); empty
// when its files are at the top.
func FromTar(r io.Reader, base string) (*Node, error) {
	root := &Node{Name: ".", Path: ".", Files: map[string]string{}}
	nodes := map[string]*Node{".": root}

	var get func(dir string) *Node

	get = func(dir string) *Node {
		dir = path.Clean(dir)
		if n, ok := nodes[dir]; ok {
			return n
		}

		parent := get(path.Dir(dir))
		n := &Node{Name: path.Base(dir), Path: dir, Parent: parent, Files: map[string]string{}}
		parent.Children = append(parent.Children, n)
		nodes[dir] = n

		return n
	}

	tr := tar.NewReader(r)

	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return nil, fmt.Errorf("cgroups: %w", err)
		}

		name := strings.TrimPrefix(path.Clean(hdr.Name), "./")
		if base != "" {
			if name == base {
				continue
			}

			rel, ok := strings.CutPrefix(name, base+"/")
			if !ok {
				continue // not under the hierarchy
			}

			name = rel
		}

		switch hdr.Typeflag {
		case tar.TypeDir:
			get(name)
		case tar.TypeReg:
			data, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			if err != nil {
				return nil, fmt.Errorf("cgroups: %s: %w", name, err)
			}

			get(path.Dir(name)).Files[path.Base(name)] = string(data)
		}
	}

	if _, ok := root.Files["cgroup.controllers"]; !ok {
		return nil, ErrNotV2
	}

	for _, n := range nodes {
		sort.Slice(n.Children, func(i, j int) bool { return n.Children[i].Name < n.Children[j].Name })
	}

	return root, nil
}

// Walk visits n and its subtree, parents first.
func (n *Node) Walk(fn func(*Node, int)) { n.walk(fn, 0) }

func (n *Node) walk(fn func(*Node, int), depth int) {
	fn(n, depth)

	for _, c := range n.Children {
		c.walk(fn, depth+1)
	}
}

// Value is a file's content, trimmed; "" when the cgroup has no such file.
func (n *Node) Value(file string) string { return strings.TrimSpace(n.Files[file]) }

// Keyed reads a "key value" file (cpu.stat, memory.stat) into a map.
func (n *Node) Keyed(file string) map[string]string {
	out := map[string]string{}

	for line := range strings.SplitSeq(n.Files[file], "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			out[k] = strings.TrimSpace(v)
		}
	}

	return out
}

// Pressure reads a PSI file: {"some": {"avg10": ..., "total": ...}, "full": ...}.
func (n *Node) Pressure(file string) map[string]map[string]string { return n.fields(file) }

// IOStat reads io.stat: per device ("8:0"), rbytes, wbytes, rios, wios...
func (n *Node) IOStat() map[string]map[string]string { return n.fields("io.stat") }

// fields reads a file of lines "name k=v k=v ...", by name.
func (n *Node) fields(file string) map[string]map[string]string {
	out := map[string]map[string]string{}

	for line := range strings.SplitSeq(n.Files[file], "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}

		m := map[string]string{}

		for _, kv := range f[1:] {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}

		out[f[0]] = m
	}

	return out
}

// Lines counts a list file's entries (cgroup.procs, cgroup.threads).
func (n *Node) Lines(file string) []string {
	return strings.Fields(n.Files[file])
}
