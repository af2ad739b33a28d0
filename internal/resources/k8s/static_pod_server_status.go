package k8s

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	StaticPodServerStatusType = "StaticPodServerStatuses.kubernetes.talos.dev"
	StaticPodServerID         = "static-pod-server-status"
)

// StaticPodServerStatusSpec says where the kubelet reads static pods.
type StaticPodServerStatusSpec struct {
	URL string `yaml:"url" json:"url"`
}

// StaticPodServerStatus is the resource type of a StaticPodServerStatusSpec.
type StaticPodServerStatus = bus.Typed[StaticPodServerStatusSpec]
