package k8s

import "github.com/talosbox/talosbox/internal/bus"

// KubeletSpecSpec is what the kubelet runs with.
type KubeletSpecSpec struct {
	Image            string         `yaml:"image" json:"image"`
	Args             []string       `yaml:"args,omitempty" json:"args,omitempty"`
	ExtraMounts      []Mount        `yaml:"extraMounts,omitempty" json:"extraMounts,omitempty"`
	ExpectedNodename string         `yaml:"expectedNodename,omitempty" json:"expectedNodename,omitempty"`
	Config           map[string]any `yaml:"config" json:"config"`
}

// Mount is an OCI mount into the kubelet's container.
type Mount struct {
	Destination string   `yaml:"destination" json:"destination"`
	Type        string   `yaml:"type,omitempty" json:"type,omitempty"`
	Source      string   `yaml:"source" json:"source"`
	Options     []string `yaml:"options,omitempty" json:"options,omitempty"`
}

// KubeletSpecType is the type's name, as Talos has it.
const KubeletSpecType = "KubeletSpecs.kubernetes.talos.dev"

// KubeletSpec is the resource type of a KubeletSpecSpec.
type KubeletSpec = bus.Typed[KubeletSpecSpec]
