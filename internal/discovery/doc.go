// Package discovery lists the nodes of a cluster on every node: each node
// publishes an affiliate record (its identity, hostname, addresses, machine
// type and OS) to a registry on the control plane, and reads everyone
// else's back as Affiliates and Members resources. Control-plane nodes
// keep the registry in etcd, under leases; workers reach it through
// trustd with the machine token.
package discovery
