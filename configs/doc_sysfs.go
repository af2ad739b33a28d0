package configs

// SysfsConfig is Talos's SysfsConfig: kernel settings under /sys,
// machine.sysfs. A key set both here and in the v1alpha1 document takes
// the document's value, as in Talos.
type SysfsConfig struct {
	Params map[string]string `yaml:"params,omitempty"`
}

// Kind implements Document.
func (*SysfsConfig) Kind() string { return "SysfsConfig" }

func (s *SysfsConfig) check(v *validator, path string) {
	emptyKernelKey(v, path, s.Params, "sysfs")
}

func (s *SysfsConfig) fold(f *folding) {
	m := f.machine()
	m.Sysfs = foldKernelSettings(f, m.Sysfs, s.Params, "machine.sysfs")
}
