package configs

// SysctlConfig is Talos's SysctlConfig: kernel parameters (/proc/sys),
// machine.sysctls. A key set both here and in the v1alpha1 document takes
// the document's value, as in Talos, which merges the two.
type SysctlConfig struct {
	Params map[string]string `yaml:"params,omitempty"`
}

// Kind implements Document.
func (*SysctlConfig) Kind() string { return "SysctlConfig" }

func (s *SysctlConfig) check(v *validator, path string) {
	emptyKernelKey(v, path, s.Params, "sysctl")
}

// The keys' rules are machine.sysctls's, applied to the folded values.
func (s *SysctlConfig) fold(f *folding) {
	m := f.machine()
	m.Sysctls = foldKernelSettings(f, m.Sysctls, s.Params, "machine.sysctls")
}

// emptyKernelKey is Talos's only rule on the documents' keys; the others
// are those of the v1alpha1 fields they fold into.
func emptyKernelKey(v *validator, path string, params map[string]string, what string) {
	if _, ok := params[""]; ok {
		v.errorf(keyPath(path+".params", ""), "%s key cannot be empty", what)
	}
}

// foldKernelSettings merges a document's params over the v1alpha1 ones.
func foldKernelSettings(f *folding, into, params map[string]string, effective string) map[string]string {
	if len(params) == 0 {
		return into
	}

	if into == nil {
		into = map[string]string{}
	}

	for _, k := range sortedKeys(params) {
		// An empty key is reported by the document's check alone.
		if k == "" {
			continue
		}

		into[k] = params[k]
		f.alias(keyPath(effective, k), keyPath("params", k))
	}

	return into
}
