package configs

// KubeControllerManagerConfig is Talos's KubeControllerManagerConfig: the
// kube-controller-manager static pod, cluster.controllerManager; enabled:
// false is machine.controlPlane.controllerManager.disabled.
type KubeControllerManagerConfig struct {
	Enabled   *bool             `yaml:"enabled,omitempty"`
	Image     string            `yaml:"image"`
	ExtraArgs Args              `yaml:"extraArgs,omitempty"`
	Env       map[string]string `yaml:"env,omitempty"`
	Resources *ResourcesConfig  `yaml:"resources,omitempty"`
}

// Kind implements Document.
func (*KubeControllerManagerConfig) Kind() string { return "KubeControllerManagerConfig" }

// check: what it sets is checked where it is folded.
func (k *KubeControllerManagerConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	// Talos checks nothing else of a disabled component.
	if enabled(k.Enabled) && k.Image == "" {
		v.requiredImage(path+".image", "kube-controller-manager")
	}
}

func (k *KubeControllerManagerConfig) fold(f *folding) {
	if f.writtenCluster().ControllerManager != nil {
		f.conflict("", "cluster.controllerManager", "the kube-controller-manager config")
	}

	if mcp := f.writtenMachine().ControlPlane; mcp != nil && mcp.ControllerManager != nil {
		f.conflict("enabled", "machine.controlPlane.controllerManager", "the kube-controller-manager config")
	}

	cm := f.controllerManager()
	cm.Image = k.Image
	cm.Env = cloneStrings(k.Env)
	cm.Resources = cloneResources(k.Resources)

	// Merged over what KubeNetworkConfig may have set (the node CIDR
	// masks): the component's own flags win, as in Talos.
	for key, val := range k.ExtraArgs {
		if cm.ExtraArgs == nil {
			cm.ExtraArgs = Args{}
		}

		cm.ExtraArgs[key] = val.clone()
		f.alias(keyPath("cluster.controllerManager.extraArgs", key), keyPath("extraArgs", key))
	}

	f.alias("cluster.controllerManager.extraArgs", "extraArgs")
	f.alias("cluster.controllerManager.image", "image")
	f.alias("cluster.controllerManager.env", "env")
	f.alias("cluster.controllerManager.resources", "resources")

	// (A worker runs none: the document is refused there.)
	if !enabled(k.Enabled) && f.cfg.IsControlPlane() {
		f.machineControlPlane().ControllerManager = &DisabledToggle{Disabled: true}
		f.alias("machine.controlPlane.controllerManager", "enabled")
	}
}
