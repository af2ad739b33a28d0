package config

import (
	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name and IDs, as Talos has them.
const (
	MachineConfigType = "MachineConfigs.config.talos.dev"
	// ActiveConfigID is the MachineConfig in effect.
	ActiveConfigID = "v1alpha1"
)

// MachineConfigSpec holds the config in effect and its source text.
type MachineConfigSpec struct {
	Config *configs.Config `yaml:"config"`
	// YAML is the config as it was applied: what is persisted, diffed
	// and shown.
	YAML string `yaml:"-"`
}

// DeepCopy keeps the bus off the reflective path for a large struct: the
// config is immutable once published, so the pointer is shared.
func (s MachineConfigSpec) DeepCopy() MachineConfigSpec { return s }

// RedactedYAML is the config as a client without os:admin sees it: every
// key, token and credential replaced by configs.Redacted, everything else
// kept. It is encoded from the parsed config, not the applied text, whose
// comments could hold anything.
func (s MachineConfigSpec) RedactedYAML() ([]byte, error) {
	return s.Config.EncodeRedacted()
}

// MachineConfig is the resource type of the active config.
type MachineConfig = bus.Typed[MachineConfigSpec]
