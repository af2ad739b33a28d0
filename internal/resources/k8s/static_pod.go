package k8s

import (
	"github.com/talosbox/talosbox/internal/bus"
)

const (
	StaticPodType = "StaticPods.kubernetes.talos.dev"
)

// StaticPodSpec is one control-plane pod, as the kubelet gets it.
type StaticPodSpec struct {
	Pod map[string]any `yaml:"pod" json:"pod"`
}

type (
	StaticPod = bus.Typed[StaticPodSpec]
)
