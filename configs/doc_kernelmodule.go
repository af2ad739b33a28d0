package configs

import "slices"

// KernelModuleConfig is Talos's KernelModuleConfig: one kernel module
// loaded at boot, with its parameters; machine.kernel.modules. A module
// named both here and in the v1alpha1 document is loaded as the document
// says, as in Talos.
type KernelModuleConfig struct {
	Name       string   `yaml:"name"`
	Parameters []string `yaml:"parameters,omitempty"`
}

// Kind implements Document.
func (*KernelModuleConfig) Kind() string { return "KernelModuleConfig" }

// DocumentName implements NamedDocument.
func (k *KernelModuleConfig) DocumentName() string { return k.Name }

// The name's and parameters' rules are machine.kernel.modules's, applied
// to the folded entry.
func (k *KernelModuleConfig) check(v *validator, path string) {
	if k.Name == "" {
		v.errorf(path+".name", "name is required: the kernel module to load, such as btrfs")
	}
}

func (k *KernelModuleConfig) fold(f *folding) {
	if k.Name == "" {
		return
	}

	m := f.machine()
	if m.Kernel == nil {
		m.Kernel = &KernelConfig{}
	}

	mod := KernelModule{Name: k.Name, Parameters: slices.Clone(k.Parameters)}

	i := slices.IndexFunc(m.Kernel.Modules, func(km KernelModule) bool { return km.Name == k.Name })
	if i < 0 {
		i = len(m.Kernel.Modules)
		m.Kernel.Modules = append(m.Kernel.Modules, mod)
	} else {
		m.Kernel.Modules[i] = mod
	}

	f.alias(indexPath("machine.kernel.modules", i), "")
}
