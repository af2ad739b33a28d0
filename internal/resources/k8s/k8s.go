package k8s

// The namespace, as Talos names it.
const (
	NamespaceK8s          = "k8s"
	NamespaceControlPlane = "controlplane"
)
