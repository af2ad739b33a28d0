package initramfs

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ExtensionsDir is where the initramfs keeps each extension's manifest,
// as <name>.yaml: what a node carries beyond talosbox itself.
const ExtensionsDir = "usr/local/etc/talosbox/extensions"

// Extension is a system extension laid out as Talos's are: a directory
// (an unpacked extension image) holding manifest.yaml and rootfs/, whose
// files are added to the node's root filesystem as they are.
type Extension struct {
	Dir      string
	Name     string
	Version  string
	Manifest []byte
}

// extensionName is what a manifest's metadata.name may be: it names a
// file.
var extensionName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// ReadExtension reads dir's manifest.yaml (version v1alpha1, with
// metadata.name and metadata.version).
func ReadExtension(dir string) (Extension, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.yaml"))
	if err != nil {
		return Extension{}, fmt.Errorf("extension %s: %w", dir, err)
	}

	var m struct {
		Version  string `yaml:"version"`
		Metadata struct {
			Name    string `yaml:"name"`
			Version string `yaml:"version"`
		} `yaml:"metadata"`
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return Extension{}, fmt.Errorf("extension %s: manifest.yaml: %w", dir, err)
	}

	switch {
	case m.Version != "v1alpha1":
		return Extension{}, fmt.Errorf("extension %s: manifest.yaml: version %q, want v1alpha1", dir, m.Version)
	case !extensionName.MatchString(m.Metadata.Name):
		return Extension{}, fmt.Errorf("extension %s: manifest.yaml: metadata.name %q: lower-case letters, digits, '.', '_' and '-'", dir, m.Metadata.Name)
	case m.Metadata.Version == "":
		return Extension{}, fmt.Errorf("extension %s: manifest.yaml: no metadata.version", dir)
	}

	if st, err := os.Stat(filepath.Join(dir, "rootfs")); err != nil || !st.IsDir() {
		return Extension{}, fmt.Errorf("extension %s: no rootfs/ directory", dir)
	}

	return Extension{Dir: dir, Name: m.Metadata.Name, Version: m.Metadata.Version, Manifest: data}, nil
}

// errExtensionModules: an extension's modules would be missing from
// modules.dep and modules.alias, which only the kernel's own tree feeds.
var errExtensionModules = errors.New("kernel modules come from the kernel's tree (--kernel-dir, --modules), not from an extension")

// addExtensions adds each extension's rootfs/ and its manifest. An
// extension may add files, never replace one: /init, the runtime or
// another extension's files stay what they are.
func (a *Archive) addExtensions(exts []Extension) error {
	seen := map[string]bool{}

	for _, e := range exts {
		if seen[e.Name] {
			return fmt.Errorf("initramfs: extension %s given twice", e.Name)
		}

		seen[e.Name] = true

		files, links, err := Runtime{Root: filepath.Join(e.Dir, "rootfs")}.Tree()
		if err != nil {
			return fmt.Errorf("initramfs: extension %s: %w", e.Name, err)
		}

		for _, name := range slices.Concat(slices.Sorted(maps.Keys(files)), slices.Sorted(maps.Keys(links))) {
			switch {
			case strings.HasPrefix(name, "lib/modules/"):
				return fmt.Errorf("initramfs: extension %s: /%s: %w", e.Name, name, errExtensionModules)
			case a.Has(name):
				return fmt.Errorf("initramfs: extension %s: /%s is in the archive already: an extension adds files, it replaces none", e.Name, name)
			}

			if target, ok := links[name]; ok {
				a.Symlink(name, target)
				continue
			}

			if err := a.File(name, files[name], 0); err != nil {
				return err
			}
		}

		a.Bytes(ExtensionsDir+"/"+e.Name+".yaml", e.Manifest, 0o644)
	}

	return nil
}
