package configs

// KubeNodeConfig is Talos's KubeNodeConfig: how this node registers with
// Kubernetes. It is machine.kubelet's registration settings and
// machine.nodeLabels, nodeAnnotations and nodeTaints; unlike v1alpha1,
// nothing is added to what it lists: a control plane gets the
// control-plane label and taint only when the document has them (gen
// config writes both).
type KubeNodeConfig struct {
	SkipNodeRegistration *bool             `yaml:"skipNodeRegistration,omitempty"`
	RegisterWithFQDN     *bool             `yaml:"registerWithFQDN,omitempty"`
	NodeIP               KubeNodeIPConfig  `yaml:"nodeIP"`
	Labels               map[string]string `yaml:"labels,omitempty"`
	Annotations          map[string]string `yaml:"annotations,omitempty"`
	// Taints maps a taint key to "value:Effect" (or just "Effect").
	Taints map[string]string `yaml:"taints,omitempty"`
}

// KubeNodeIPConfig picks the node IP. No subnet (nodeIP: {}) is Talos's
// default: an address of each service subnet's family.
type KubeNodeIPConfig struct {
	// ValidSubnets are CIDRs or addresses; a leading "!" excludes one.
	ValidSubnets []string `yaml:"validSubnets,omitempty"`
}

// Kind implements Document.
func (*KubeNodeConfig) Kind() string { return "KubeNodeConfig" }

// The control-plane role label and taint, as gen config writes them.
const (
	controlPlaneRole   = "node-role.kubernetes.io/control-plane"
	controlPlaneEffect = "NoSchedule"
)

// Labels, annotations, taints and node IP subnets are checked where they
// are folded (machine.nodeLabels, ... machine.kubelet.nodeIP), with the
// same rules Talos has.
func (k *KubeNodeConfig) check(*validator, string) {}

func (k *KubeNodeConfig) fold(f *folding) {
	wc, wm := f.writtenCluster(), f.writtenMachine()

	switch {
	case wc.AllowSchedulingOnControlPlanes:
		f.conflict("taints", "cluster.allowSchedulingOnControlPlanes", "scheduling on control planes (the control-plane taint)")
	case wm.Kubelet != nil && wm.Kubelet.SkipNodeRegistration:
		f.conflict("skipNodeRegistration", "machine.kubelet.skipNodeRegistration", "skipping node registration")
	case wm.Kubelet != nil && wm.Kubelet.RegisterWithFQDN:
		f.conflict("registerWithFQDN", "machine.kubelet.registerWithFQDN", "registering with the FQDN")
	case wm.Kubelet != nil && wm.Kubelet.NodeIP != nil:
		f.conflict("nodeIP", "machine.kubelet.nodeIP", "the node IP selection")
	case wm.NodeLabels != nil:
		f.conflict("labels", "machine.nodeLabels", "the set of node labels")
	case wm.NodeAnnotations != nil:
		f.conflict("annotations", "machine.nodeAnnotations", "the set of node annotations")
	case wm.NodeTaints != nil:
		f.conflict("taints", "machine.nodeTaints", "the set of node taints")
	}

	kl := f.kubelet()
	kl.SkipNodeRegistration = k.SkipNodeRegistration != nil && *k.SkipNodeRegistration
	kl.RegisterWithFQDN = k.RegisterWithFQDN != nil && *k.RegisterWithFQDN
	kl.NodeIP = &KubeletNodeIP{ValidSubnets: append([]string(nil), k.NodeIP.ValidSubnets...)}
	f.alias("machine.kubelet.skipNodeRegistration", "skipNodeRegistration")
	f.alias("machine.kubelet.registerWithFQDN", "registerWithFQDN")
	f.alias("machine.kubelet.nodeIP", "nodeIP")

	m := f.machine()
	m.NodeLabels = cloneStrings(k.Labels)
	m.NodeAnnotations = cloneStrings(k.Annotations)
	m.NodeTaints = nil
	f.alias("machine.nodeLabels", "labels")
	f.alias("machine.nodeAnnotations", "annotations")
	f.alias("machine.nodeTaints", "taints")

	// A control plane registers with the control-plane taint unless
	// cluster.allowSchedulingOnControlPlanes; here the taint is there
	// when the document lists it, and only then.
	cpTaint := false

	for key, val := range k.Taints {
		if isControlPlaneTaint(key, val) && f.cfg.IsControlPlane() {
			cpTaint = true

			continue
		}

		if m.NodeTaints == nil {
			m.NodeTaints = map[string]string{}
		}

		m.NodeTaints[key] = val
	}

	if f.cfg.IsControlPlane() {
		f.cluster().AllowSchedulingOnControlPlanes = !cpTaint
		f.alias("cluster.allowSchedulingOnControlPlanes", "taints")
	}
}

// HasControlPlaneLabel reports whether the node's KubeNodeConfig, if it
// has one, gives it the control-plane role label: without the document a
// control plane always has it (v1alpha1), with it only when listed.
func HasControlPlaneLabel(c *Config) bool {
	k := DocumentOf[*KubeNodeConfig](c)
	if k == nil {
		return true
	}

	_, ok := k.Labels[controlPlaneRole]

	return ok
}

// isControlPlaneTaint is the taint Talos gives control planes.
func isControlPlaneTaint(key, val string) bool {
	value, effect := ParseTaint(val)

	return key == controlPlaneRole && value == "" && effect == controlPlaneEffect
}
