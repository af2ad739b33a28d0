package block

import "github.com/talosbox/talosbox/internal/bus"

// VolumeStatusType is Talos's VolumeStatus (`talosctl get volumestatus`).
const VolumeStatusType = "VolumeStatuses.block.talos.dev"

// Volume phases, as Talos names them.
const (
	PhaseReady  = "ready"
	PhaseFailed = "failed"
	PhaseClosed = "closed"
)

// VolumeStatusSpec is one system volume's state, with Talos's keys.
type VolumeStatusSpec struct {
	Phase                    string   `yaml:"phase"`
	Type                     string   `yaml:"type"`
	Location                 string   `yaml:"location"`
	MountLocation            string   `yaml:"mountLocation,omitempty"`
	PartitionIndex           int      `yaml:"partitionIndex,omitempty"`
	ParentLocation           string   `yaml:"parentLocation,omitempty"`
	Size                     int64    `yaml:"size"`
	PrettySize               string   `yaml:"prettySize"`
	Filesystem               string   `yaml:"filesystem,omitempty"`
	EncryptionProvider       string   `yaml:"encryptionProvider,omitempty"`
	ConfiguredEncryptionKeys []string `yaml:"configuredEncryptionKeys,omitempty"`
	EncryptionFailedSyncs    []string `yaml:"encryptionFailedSyncs,omitempty"`
	MountPath                string   `yaml:"mountPath,omitempty"`
	ErrorMessage             string   `yaml:"errorMessage,omitempty"`
}

// VolumeStatus is the resource type of a VolumeStatusSpec.
type VolumeStatus = bus.Typed[VolumeStatusSpec]
