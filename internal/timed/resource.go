package timed

// The TimeStatus resource other services wait on ("time synced" is a
// dependency of etcd and the kubelet in Talos).
const (
	// Owner is the bus owner timed writes as.
	Owner = "timed"
)
