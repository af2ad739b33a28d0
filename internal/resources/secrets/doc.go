// Package secrets holds the node's secrets resources, with Talos's type
// names, namespace, IDs and spec keys: the root material each node derives
// from its machine config (the Talos API CA and token, the etcd CA, the
// Kubernetes CAs and keys) and the names the node's API certificate
// carries. Every type is sensitive: a caller without os:admin sees the
// specs with each key and token masked. Producers and consumers both
// import it.
package secrets
