package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// IndexPath is the artifact that lists the others, the placeholders and
// the notes of a render.
const IndexPath = "index.yaml"

// Artifact is one rendered file.
type Artifact struct {
	// Path is where it goes under the render directory, slash-separated.
	Path string
	// NodePath is where a node keeps it, or says what the node does with
	// it when it is no file there ("served to the kubelet").
	NodePath string
	// Mode is the node's mode for the file. Write makes every file 0600
	// whatever it is: a render may hold secrets (WithSecrets).
	Mode fs.FileMode
	Data []byte
}

// Artifacts are everything a render produced, sorted by Path.
type Artifacts struct {
	Mode         configs.Mode
	List         []Artifact
	Placeholders []Placeholder
	// Notes are what a reader should know: placeholders that left
	// something out, files a node would append to.
	Notes []string
	// Redacted says the config's secrets were replaced by
	// configs.Redacted.
	Redacted bool
}

// Get returns the artifact at p.
func (a *Artifacts) Get(p string) (Artifact, bool) {
	i, ok := slices.BinarySearchFunc(a.List, p, func(x Artifact, p string) int { return strings.Compare(x.Path, p) })
	if !ok {
		return Artifact{}, false
	}

	return a.List[i], true
}

type indexEntry struct {
	Path string `yaml:"path"`
	Node string `yaml:"node,omitempty"`
	Mode string `yaml:"mode,omitempty"`
}

type index struct {
	Comment      string        `yaml:"rendered"`
	Mode         configs.Mode  `yaml:"mode"`
	Secrets      string        `yaml:"secrets"`
	Placeholders []Placeholder `yaml:"placeholders"`
	Notes        []string      `yaml:"notes,omitempty"`
	Artifacts    []indexEntry  `yaml:"artifacts"`
}

// addIndex adds IndexPath, which Write also reads back to remove what an
// earlier render wrote and this one did not.
func (a *Artifacts) addIndex() error {
	idx := index{
		Comment: "what a node would make of this config (talosctl validate --render); see placeholders for what stands for the node's own",
		Mode:    a.Mode, Secrets: "in clear", Placeholders: a.Placeholders, Notes: a.Notes,
	}

	if a.Redacted {
		idx.Secrets = "redacted: " + configs.Redacted
	}

	for _, x := range a.List {
		e := indexEntry{Path: x.Path, Node: x.NodePath}
		if x.Mode != 0 {
			e.Mode = fmt.Sprintf("%04o", octal(x.Mode))
		}

		idx.Artifacts = append(idx.Artifacts, e)
	}

	var buf bytes.Buffer

	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)

	if err := enc.Encode(idx); err != nil {
		return fmt.Errorf("render index: %w", err)
	}

	a.List = append(a.List, Artifact{Path: IndexPath, Data: buf.Bytes()})
	slices.SortFunc(a.List, func(x, y Artifact) int { return strings.Compare(x.Path, y.Path) })

	return nil
}

// Write writes the artifacts under dir (made 0700 if missing), each file
// 0600. dir must be empty or hold an earlier render, whose files that
// this one does not have are removed, so that two renders diff exactly.
// Writes stay inside dir, symbolic links included.
func (a *Artifacts) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("render: %w", err)
	}

	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	defer root.Close()

	stale, err := previous(root, dir)
	if err != nil {
		return err
	}

	for _, x := range a.List {
		if !filepath.IsLocal(filepath.FromSlash(x.Path)) {
			return fmt.Errorf("render: artifact path %q leaves %s", x.Path, dir)
		}

		delete(stale, x.Path)

		if d := path.Dir(x.Path); d != "." {
			if err := root.MkdirAll(filepath.FromSlash(d), 0o700); err != nil {
				return fmt.Errorf("render: %s: %w", x.Path, err)
			}
		}

		if err := writeFile(root, filepath.FromSlash(x.Path), x.Data); err != nil {
			return fmt.Errorf("render: %s: %w", x.Path, err)
		}
	}

	for p := range stale {
		if err := root.Remove(filepath.FromSlash(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("render: remove %s of the earlier render: %w", p, err)
		}

		// Directories the earlier render made and left empty go too.
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if root.Remove(filepath.FromSlash(d)) != nil {
				break
			}
		}
	}

	return nil
}

// previous lists the files of the earlier render in dir, refusing a
// directory that holds anything else.
func previous(root *os.Root, dir string) (map[string]bool, error) {
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}

	if len(entries) == 0 {
		return map[string]bool{}, nil
	}

	data, err := fs.ReadFile(root.FS(), IndexPath)
	if err != nil {
		return nil, fmt.Errorf("render: %s is not empty and holds no earlier render (%s): refusing to write into it", dir, IndexPath)
	}

	var idx index
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("render: %s: %s: %w", dir, IndexPath, err)
	}

	stale := map[string]bool{}

	for _, e := range idx.Artifacts {
		if filepath.IsLocal(filepath.FromSlash(e.Path)) {
			stale[e.Path] = true
		}
	}

	return stale, nil
}

func writeFile(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}

	// An earlier file keeps its mode through O_TRUNC.
	if err := f.Chmod(0o600); err != nil {
		f.Close()

		return err
	}

	if _, err := f.Write(data); err != nil {
		f.Close()

		return err
	}

	return f.Close()
}
