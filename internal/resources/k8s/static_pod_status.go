package k8s

import (
	"github.com/talosbox/talosbox/internal/bus"
)

const (
	StaticPodStatusType = "StaticPodStatuses.kubernetes.talos.dev"
	StaticPodsStatusID  = "static-pods"
)

// StaticPodStatusSpec is the pod's status as the kubelet reports it.
type StaticPodStatusSpec struct {
	PodStatus map[string]any `yaml:",inline" json:",inline"`
}

type (
	StaticPodStatus = bus.Typed[StaticPodStatusSpec]
)
