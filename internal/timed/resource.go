package timed

import "github.com/talosbox/talosbox/internal/bus"

// The TimeStatus resource other services wait on ("time synced" is a
// dependency of etcd and the kubelet in Talos).
const (
	TimeStatusType = "TimeStatuses.v1alpha1.talos.dev"
	Namespace      = "runtime"
	StatusID       = "node"
	// Owner is the bus owner timed writes as.
	Owner = "timed"
)

// Definition registers TimeStatus for talosctl get.
var Definition = bus.Definition{
	Type:             TimeStatusType,
	DefaultNamespace: Namespace,
	Aliases:          []string{"timestatus"},
	PrintColumns: []bus.PrintColumn{
		{Name: "SYNCED", JSONPath: "{.synced}"},
		{Name: "EPOCH", JSONPath: "{.epoch}"},
	},
}

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
func StatusPointer() bus.Pointer {
	return bus.Pointer{Namespace: Namespace, Type: TimeStatusType, ID: StatusID}
}

// NewTimeStatus makes a TimeStatus that is not stored yet.
func NewTimeStatus(spec TimeStatusSpec) *TimeStatus {
	return bus.NewTyped(Namespace, TimeStatusType, StatusID, spec)
}
