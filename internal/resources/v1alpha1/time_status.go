package v1alpha1

import (
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// The type's name and IDs, as Talos has them.
const (
	TimeStatusType = "TimeStatuses.v1alpha1.talos.dev"
	TimeStatusID   = "node"
)

// TimeStatusSpec is the node's time sync state.
type TimeStatusSpec struct {
	// Synced is true once a server answered well (or the boot timeout
	// passed, or sync is disabled): from then on the clock is trusted.
	Synced bool `yaml:"synced" json:"synced"`
	// Epoch grows by one each time the clock is stepped, so a consumer
	// holding time-based state (certificates, leases) knows to recheck it.
	Epoch int `yaml:"epoch" json:"epoch"`
	// SyncDisabled mirrors machine.time.disabled.
	SyncDisabled bool `yaml:"syncDisabled" json:"syncDisabled"`
}

// TimeStatus is the stored resource.
type TimeStatus = bus.Typed[TimeStatusSpec]

// StatusPointer names the node's TimeStatus.
func TimeStatusPointer() bus.Pointer {
	return bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: TimeStatusType, ID: TimeStatusID}
}

// NewTimeStatus makes a TimeStatus that is not stored yet.
func NewTimeStatus(spec TimeStatusSpec) *TimeStatus {
	return bus.NewTyped(runtime.NamespaceRuntime, TimeStatusType, TimeStatusID, spec)
}
