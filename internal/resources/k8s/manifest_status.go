package k8s

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	ManifestStatusType = "ManifestStatuses.kubernetes.talos.dev"
	ManifestStatusID   = "manifests"
)

// ManifestStatusSpec says what applying the current manifests did: the
// manifests applied in full (Talos's field) and, a talosbox addition,
// each object by what happened to it ("Kind namespace/name"), over the
// runs that applied these manifests and this prune setting (a retry
// after an error adds to them).
type ManifestStatusSpec struct {
	ManifestsApplied []string `yaml:"manifestsApplied" json:"manifestsApplied"`
	// Prune is cluster.manifestsPrune as applied.
	Prune            bool     `yaml:"prune" json:"prune"`
	ObjectsCreated   []string `yaml:"objectsCreated,omitempty" json:"objectsCreated,omitempty"`
	ObjectsUpdated   []string `yaml:"objectsUpdated,omitempty" json:"objectsUpdated,omitempty"`
	ObjectsUnchanged []string `yaml:"objectsUnchanged,omitempty" json:"objectsUnchanged,omitempty"`
	// ObjectsPruned were deleted: talosbox's, and in no manifest.
	ObjectsPruned []string `yaml:"objectsPruned,omitempty" json:"objectsPruned,omitempty"`
	// ObjectsKept are talosbox's and in no manifest, but stay: prune is
	// off, they are Namespaces or CRDs, or the apply had errors.
	ObjectsKept []string `yaml:"objectsKept,omitempty" json:"objectsKept,omitempty"`
	// Counts are the lengths of the lists, for `talosctl get`'s columns.
	Counts ManifestCounts `yaml:"counts" json:"counts"`
	// Error is the last run's, until a run succeeds.
	Error string `yaml:"error,omitempty" json:"error,omitempty"`
}

// ManifestCounts count the objects of a ManifestStatusSpec.
type ManifestCounts struct {
	Created   int `yaml:"created" json:"created"`
	Updated   int `yaml:"updated" json:"updated"`
	Unchanged int `yaml:"unchanged" json:"unchanged"`
	Pruned    int `yaml:"pruned" json:"pruned"`
	Kept      int `yaml:"kept" json:"kept"`
}

// ManifestStatus is the resource type of a ManifestStatusSpec.
type ManifestStatus = bus.Typed[ManifestStatusSpec]
