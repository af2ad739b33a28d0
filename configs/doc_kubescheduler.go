package configs

// KubeSchedulerConfig is Talos's KubeSchedulerConfig: the kube-scheduler
// static pod and its configuration, cluster.scheduler; enabled: false is
// machine.controlPlane.scheduler.disabled.
type KubeSchedulerConfig struct {
	Enabled *bool  `yaml:"enabled,omitempty"`
	Image   string `yaml:"image"`
	// Config is merged over the KubeSchedulerConfiguration the node
	// writes; config: {} changes nothing.
	Config    Unstructured      `yaml:"config"`
	ExtraArgs Args              `yaml:"extraArgs,omitempty"`
	Env       map[string]string `yaml:"env,omitempty"`
	Resources *ResourcesConfig  `yaml:"resources,omitempty"`
}

// Kind implements Document.
func (*KubeSchedulerConfig) Kind() string { return "KubeSchedulerConfig" }

// check: what it sets is checked where it is folded (the configuration
// against the scheduler's schema).
func (k *KubeSchedulerConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	if enabled(k.Enabled) && k.Image == "" {
		v.requiredImage(path+".image", "kube-scheduler")
	}
}

func (k *KubeSchedulerConfig) fold(f *folding) {
	if f.writtenCluster().Scheduler != nil {
		f.conflict("", "cluster.scheduler", "the kube-scheduler config")
	}

	if mcp := f.writtenMachine().ControlPlane; mcp != nil && mcp.Scheduler != nil {
		f.conflict("enabled", "machine.controlPlane.scheduler", "the kube-scheduler config")
	}

	s := f.scheduler()
	s.Image = k.Image
	s.Config = cloneUnstructured(k.Config)
	s.ExtraArgs = k.ExtraArgs.Clone()
	s.Env = cloneStrings(k.Env)
	s.Resources = cloneResources(k.Resources)

	f.alias("cluster.scheduler.image", "image")
	f.alias("cluster.scheduler.config", "config")
	f.alias("cluster.scheduler.extraArgs", "extraArgs")
	f.alias("cluster.scheduler.env", "env")
	f.alias("cluster.scheduler.resources", "resources")

	// (A worker runs none: the document is refused there.)
	if !enabled(k.Enabled) && f.cfg.IsControlPlane() {
		f.machineControlPlane().Scheduler = &DisabledToggle{Disabled: true}
		f.alias("machine.controlPlane.scheduler", "enabled")
	}
}
