package etcd

// The namespace, as Talos names it.
const (
	EtcdNamespace = "etcd"
)
