// Package etcd holds the etcd resources: the member this node runs and its spec, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package etcd
