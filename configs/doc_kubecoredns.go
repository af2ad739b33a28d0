package configs

// KubeCoreDNSConfig is Talos's KubeCoreDNSConfig: the CoreDNS deployment,
// cluster.coreDNS. An empty image is the default CoreDNS; without the
// document CoreDNS is deployed too.
type KubeCoreDNSConfig struct {
	Enabled *bool  `yaml:"enabled,omitempty"`
	Image   string `yaml:"image,omitempty"`
}

// Kind implements Document.
func (*KubeCoreDNSConfig) Kind() string { return "KubeCoreDNSConfig" }

// check: the image is checked where it is folded.
func (k *KubeCoreDNSConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())
}

func (k *KubeCoreDNSConfig) fold(f *folding) {
	if f.writtenCluster().CoreDNS != nil {
		f.conflict("", "cluster.coreDNS", "the CoreDNS config")
	}

	f.cluster().CoreDNS = &CoreDNSConfig{Disabled: !enabled(k.Enabled), Image: k.Image}
	f.alias("cluster.coreDNS", "")
	f.alias("cluster.coreDNS.disabled", "enabled")
	f.alias("cluster.coreDNS.image", "image")
}
