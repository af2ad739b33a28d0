package k8s

import "github.com/talosbox/talosbox/internal/bus"

// StaticPodType is the type's name, as Talos has it.
const StaticPodType = "StaticPods.kubernetes.talos.dev"

// StaticPodSpec is one control-plane pod, as the kubelet gets it.
type StaticPodSpec struct {
	Pod map[string]any `yaml:"pod" json:"pod"`
}

// StaticPod is the resource type of a StaticPodSpec.
type StaticPod = bus.Typed[StaticPodSpec]
