// Package cri holds the CRI resources: the registry mirrors and credentials containerd applies, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package cri
