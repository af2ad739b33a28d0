package k8s

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	KubePrismEndpointsType = "KubePrismEndpoints.kubernetes.talos.dev"
	KubePrismID            = "k8s-cluster"
)

// KubePrismEndpointsSpec are the API servers KubePrism balances.
type KubePrismEndpointsSpec struct {
	Endpoints []KubePrismEndpoint `yaml:"endpoints" json:"endpoints"`
}

// KubePrismEndpoint is one API server.
type KubePrismEndpoint struct {
	Host string `yaml:"host" json:"host"`
	Port int    `yaml:"port" json:"port"`
}

// KubePrismEndpoints is the resource type of a KubePrismEndpointsSpec.
type KubePrismEndpoints = bus.Typed[KubePrismEndpointsSpec]
