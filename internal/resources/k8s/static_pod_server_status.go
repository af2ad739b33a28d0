package k8s

import (
	"github.com/talosbox/talosbox/internal/bus"
)

const (
	StaticPodServerStatusType = "StaticPodServerStatuses.kubernetes.talos.dev"
	StaticPodServerID         = "static-pod-server-status"
)

// StaticPodServerStatusSpec says where the kubelet reads static pods.
type StaticPodServerStatusSpec struct {
	URL string `yaml:"url" json:"url"`
}

type (
	StaticPodServerStatus = bus.Typed[StaticPodServerStatusSpec]
)
