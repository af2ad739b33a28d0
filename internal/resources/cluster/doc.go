// Package cluster holds the cluster resources: this node's identity and the affiliates and members discovery publishes, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package cluster
