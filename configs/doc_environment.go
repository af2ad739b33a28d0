package configs

import "maps"

// EnvironmentConfig is Talos's EnvironmentConfig: environment variables
// for the node's processes, machine.env. A variable set both here and in
// the v1alpha1 document takes the document's value, as in Talos, which
// appends the document's variables after the v1alpha1 ones.
type EnvironmentConfig struct {
	Variables map[string]string `yaml:"variables,omitempty"`
}

// Kind implements Document.
func (*EnvironmentConfig) Kind() string { return "EnvironmentConfig" }

// The names' rule, Talos's (POSIX names), is machine.env's, applied to
// the folded variables.
func (*EnvironmentConfig) check(*validator, string) {}

func (e *EnvironmentConfig) fold(f *folding) {
	if len(e.Variables) == 0 {
		return
	}

	m := f.machine()
	if m.Env == nil {
		m.Env = map[string]string{}
	}

	maps.Copy(m.Env, e.Variables)

	for _, k := range sortedKeys(e.Variables) {
		f.alias(keyPath("machine.env", k), keyPath("variables", k))
	}
}
