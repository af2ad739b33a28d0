package k8s

const (
	NamespaceK8s          = "k8s"
	NamespaceControlPlane = "controlplane"
)
