package configs

import "strconv"

// ExtensionServiceConfig is Talos's ExtensionServiceConfig: files and
// environment for the service a system extension runs. talosbox carries
// extensions' files (internal/machine/extensions.go) but runs no
// extension services, so there is nothing to configure: the document
// decodes (and patches merge its configFiles by mountPath), and check
// refuses it.
type ExtensionServiceConfig struct {
	Name        string                       `yaml:"name"`
	ConfigFiles []ExtensionServiceConfigFile `yaml:"configFiles,omitempty"`
	Environment []string                     `yaml:"environment,omitempty"`
}

// ExtensionServiceConfigFile is one file the service gets, at mountPath.
type ExtensionServiceConfigFile struct {
	Content   string `yaml:"content"`
	MountPath string `yaml:"mountPath"`
}

// Kind implements Document.
func (*ExtensionServiceConfig) Kind() string { return "ExtensionServiceConfig" }

// DocumentName implements NamedDocument.
func (e *ExtensionServiceConfig) DocumentName() string { return e.Name }

func (e *ExtensionServiceConfig) check(v *validator, path string) {
	// Talos's rules first, so a document fixed for Talos is told only
	// what talosbox lacks.
	if e.Name == "" {
		v.errorf(path+".name", "name is required: the extension service's name (nut-client)")
	}

	if len(e.ConfigFiles) == 0 && len(e.Environment) == 0 {
		v.errorf(path, "no config files found for extension %q: write configFiles or environment", e.Name)
	}

	for i, f := range e.ConfigFiles {
		p := path + ".configFiles[" + strconv.Itoa(i) + "]"

		if f.Content == "" {
			v.errorf(p+".content", "extension content is required for extension %q", e.Name)
		}

		if f.MountPath == "" {
			v.errorf(p+".mountPath", "extension mount path is required for extension %q", e.Name)
		}
	}

	v.errorf(path, "talosbox does not run extension services yet: there is no service %q to configure (remove the document)", e.Name)
}

// fold: nothing in v1alpha1 says it.
func (*ExtensionServiceConfig) fold(*folding) {}
