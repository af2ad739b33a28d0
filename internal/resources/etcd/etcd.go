package etcd

const (
	EtcdNamespace = "etcd"
)
