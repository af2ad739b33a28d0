package k8s

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	StaticPodStatusType = "StaticPodStatuses.kubernetes.talos.dev"
	StaticPodsStatusID  = "static-pods"
)

// StaticPodStatusSpec is the pod's status as the kubelet reports it.
type StaticPodStatusSpec struct {
	PodStatus map[string]any `yaml:",inline" json:",inline"`
}

// StaticPodStatus is the resource type of a StaticPodStatusSpec.
type StaticPodStatus = bus.Typed[StaticPodStatusSpec]
