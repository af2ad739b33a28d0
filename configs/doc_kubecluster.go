package configs

// KubeClusterConfig is Talos's KubeClusterConfig: the cluster's name and
// the Kubernetes API endpoint, cluster.clusterName and
// cluster.controlPlane.endpoint.
type KubeClusterConfig struct {
	ClusterName string `yaml:"clusterName"`
	// Endpoint is the https URL of the Kubernetes API.
	Endpoint string `yaml:"endpoint"`
}

// Kind implements Document.
func (*KubeClusterConfig) Kind() string { return "KubeClusterConfig" }

func (k *KubeClusterConfig) check(v *validator, path string) {
	if k.ClusterName == "" {
		v.errorf(path+".clusterName", "clusterName must be specified")
	}

	// The endpoint is checked as cluster.controlPlane.endpoint, where it
	// is folded; the rules are the same.
	if k.Endpoint == "" {
		v.errorf(path+".endpoint", "endpoint must be specified: the https URL of the Kubernetes API (https://HOST:6443)")
	}
}

func (k *KubeClusterConfig) fold(f *folding) {
	w := f.writtenCluster()

	if w.ClusterName != "" {
		f.conflict("clusterName", "cluster.clusterName", "the cluster name")
	}

	if w.ControlPlane != nil && w.ControlPlane.Endpoint != "" {
		f.conflict("endpoint", "cluster.controlPlane.endpoint", "the cluster endpoint")
	}

	f.cluster().ClusterName = k.ClusterName
	f.alias("cluster.clusterName", "clusterName")

	f.controlPlaneEndpoint().Endpoint = k.Endpoint
	f.alias("cluster.controlPlane.endpoint", "endpoint")
}
