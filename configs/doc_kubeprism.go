package configs

// KubePrismConfig is Talos's KubePrismConfig: the node-local load
// balancer in front of the API servers, on 127.0.0.1:port,
// machine.features.kubePrism (enabled). Without it there is none.
type KubePrismConfig struct {
	Port int `yaml:"port"`
	// TLSServerName would be the SNI the kubelet uses through KubePrism;
	// the kubelet's own kubeconfig (written when it bootstraps) keeps no
	// server name, so talosbox refuses it.
	TLSServerName string `yaml:"tlsServerName,omitempty"`
}

// Kind implements Document.
func (*KubePrismConfig) Kind() string { return "KubePrismConfig" }

func (k *KubePrismConfig) check(v *validator, path string) {
	if k.Port <= 0 || k.Port > 65535 {
		v.errorf(path+".port", "invalid port %d: must be in range 1-65535", k.Port)
	}

	if k.TLSServerName != "" {
		v.errorf(path+".tlsServerName", "talosbox cannot honour tlsServerName: the kubelet's kubeconfig, which it writes itself when it bootstraps, "+
			"keeps no TLS server name, so the kubelet would verify KubePrism's certificate as 127.0.0.1 anyway; remove it")
	}
}

func (k *KubePrismConfig) fold(f *folding) {
	if w := f.writtenMachine().Features; w != nil && w.KubePrism != nil {
		f.conflict("", "machine.features.kubePrism", "KubePrism")
	}

	f.features().KubePrism = &KubePrism{Enabled: ptr(true), Port: k.Port}
	f.alias("machine.features.kubePrism", "")
	f.alias("machine.features.kubePrism.port", "port")
}
