package k8s

import (
	"github.com/talosbox/talosbox/internal/bus"
)

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

type (
	KubePrismEndpoints = bus.Typed[KubePrismEndpointsSpec]
)
