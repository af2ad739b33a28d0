// Package constants holds the numbers and paths that several parts of
// talosbox must agree on (the node, talosctl, the image builder and the
// tests): ports, file locations and the cluster defaults Talos applies
// when a config is silent. Values are Talos's, so Talos docs and habits
// apply unchanged.
package constants

// The node's ports.
const (
	// ApidPort is apid's (the node API, mutual TLS) on every node.
	ApidPort = 50000
	// TrustdPort is trustd's: joining nodes fetch certificates there.
	TrustdPort = 50001
	// KubePrismPort is KubePrism's default: the node-local load balancer
	// in front of the control plane's API servers.
	KubePrismPort = 7445
	// DefaultAPIServerPort is the API server's port when the cluster
	// endpoint names none.
	DefaultAPIServerPort = "6443"
)
