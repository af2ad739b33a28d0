package configs

// SecurityProfileConfig is Talos's SecurityProfileConfig (written by gen
// config since Talos 1.14 with workloadIsolation: true). With workload
// isolation Talos runs the container plane (the CRI, the kubelet and the
// pods) in a PID and mount namespace of its own, under an init of its
// own (sandboxd) that outlives the CRI's restarts; it is off for nodes in
// containers. talosbox does not implement it yet, so it is accepted off,
// and on only for nodes in containers, where Talos ignores it too.
type SecurityProfileConfig struct {
	WorkloadIsolation *bool `yaml:"workloadIsolation,omitempty"`
}

// Kind implements Document.
func (*SecurityProfileConfig) Kind() string { return "SecurityProfileConfig" }

func (s *SecurityProfileConfig) check(v *validator, path string) {
	if s.WorkloadIsolation != nil && *s.WorkloadIsolation && v.mode != ModeContainer {
		v.errorf(path+".workloadIsolation", "talosbox does not implement workload isolation yet (Talos runs the CRI, the kubelet "+
			"and the pods in a PID and mount namespace of their own): set workloadIsolation: false; only a node in a container, "+
			"where Talos does not isolate workloads either, accepts it on")
	}
}

func (*SecurityProfileConfig) fold(*folding) {}
