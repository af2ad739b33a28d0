// Package machine is the node runtime behind machined: it acquires and
// persists the machine config, runs the lifecycle sequences, supervises
// the services and applies configuration changes. Its state is published
// on the bus as resources, so every other part of the node (and, through
// apid, every client) sees the same thing.
package machine

import (
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// Namespaces and resource types owned by the machine runtime.
const (
	NamespaceConfig  = "config"
	NamespaceRuntime = "runtime"

	MachineConfigType   = "MachineConfigs.config.talos.dev"
	MachineStageType    = "MachineStages.runtime.talos.dev"
	MachineStatusType   = "MachineStatuses.runtime.talos.dev"
	ConfigLoadErrorType = "ConfigLoadErrors.runtime.talos.dev"

	// ActiveConfigID is the MachineConfig in effect.
	ActiveConfigID = "v1alpha1"
	// LastLoadErrorID and BootErrorID name the ConfigLoadErrors.
	LastLoadErrorID = "last"
	BootErrorID     = "boot"
	// MachineID names the singleton runtime resources.
	MachineID = "machine"

	// owner of everything the runtime writes directly.
	owner = "machined"
)

// Definitions of the types above, for the registry behind `talosctl get`.
var Definitions = []bus.Definition{
	{Type: MachineConfigType, DefaultNamespace: NamespaceConfig, Aliases: []string{"mc", "machineconfig"}, Sensitive: true},
	{Type: MachineStageType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"stage"}, NoInitials: true,
		PrintColumns: []bus.PrintColumn{{Name: "STAGE", JSONPath: "{.stage}"}}},
	{Type: MachineStatusType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"machinestatus"},
		PrintColumns: []bus.PrintColumn{{Name: "STAGE", JSONPath: "{.stage}"}, {Name: "READY", JSONPath: "{.status.ready}"}}},
	// Sensitive: a refused config is kept in the record, secrets and all.
	{Type: ConfigLoadErrorType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"configerror"}, Sensitive: true,
		PrintColumns: []bus.PrintColumn{{Name: "ERROR", JSONPath: "{.error}"}}},
	// Registry credentials are secrets.
	{Type: RegistriesConfigType, DefaultNamespace: NamespaceCRI, Aliases: []string{"registriesconfig", "registries"}, Sensitive: true},
}

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

// Stage is the node's lifecycle stage, as Talos names them.
type Stage string

// Stages.
const (
	StageBooting      Stage = "booting"
	StageMaintenance  Stage = "maintenance"
	StageRunning      Stage = "running"
	StageRebooting    Stage = "rebooting"
	StageShuttingDown Stage = "shuttingDown"
	StageUpgrading    Stage = "upgrading"
	StageResetting    Stage = "resetting"
)

// MachineStageSpec is written by the sequencer as it goes.
type MachineStageSpec struct {
	Stage Stage `yaml:"stage"`
}

// MachineStage is the resource type of the current stage.
type MachineStage = bus.Typed[MachineStageSpec]

// UnmetCondition is one reason the node is not ready.
type UnmetCondition struct {
	Name   string `yaml:"name"`
	Reason string `yaml:"reason"`
}

// MachineStatusSpec says where the node is and whether it is ready.
type MachineStatusSpec struct {
	Stage  Stage `yaml:"stage"`
	Status struct {
		Ready           bool             `yaml:"ready"`
		UnmetConditions []UnmetCondition `yaml:"unmetConditions,omitempty"`
	} `yaml:"status"`
}

// DeepCopy copies the conditions slice.
func (s MachineStatusSpec) DeepCopy() MachineStatusSpec {
	s.Status.UnmetConditions = slices.Clone(s.Status.UnmetConditions)
	return s
}

// MachineStatus is the resource type of the node's status.
type MachineStatus = bus.Typed[MachineStatusSpec]

// ConfigLoadErrorSpec records why a config was refused. ID "last" is the
// last config refused as invalid (at load or by an apply in maintenance
// mode); ID "boot" is the last config the node refused to boot (a boot
// task failed, or a persisted config no longer validates) and what it did
// instead: that one is kept on STATE (config-fallback.yaml) and shown
// again after every boot until the same config boots to running.
type ConfigLoadErrorSpec struct {
	Source string    `yaml:"source"`
	Error  string    `yaml:"error"`
	Time   time.Time `yaml:"time"`
	// Phase and Task name the boot step that failed.
	Phase string `yaml:"phase,omitempty"`
	Task  string `yaml:"task,omitempty"`
	// Action says what the node did instead of booting the config.
	Action string `yaml:"action,omitempty"`
	// FailedConfigPath is where STATE keeps the refused config.
	FailedConfigPath string `yaml:"failedConfigPath,omitempty"`
	// FailedConfig is the refused config as it was applied (redacted when
	// the node fell back to maintenance mode, see Node.fallBack).
	FailedConfig string `yaml:"failedConfig,omitempty"`
}

// RedactedYAML is the record as a client without os:admin sees it: the
// failed config's secrets masked, as `get mc` masks them; a config that
// does not even decode is left out.
func (s ConfigLoadErrorSpec) RedactedYAML() ([]byte, error) {
	if s.FailedConfig != "" {
		cfg, err := configs.Decode([]byte(s.FailedConfig))
		if err != nil {
			s.FailedConfig = ""
		} else {
			red, err := cfg.EncodeRedacted()
			if err != nil {
				return nil, err
			}

			s.FailedConfig = string(red)
		}
	}

	return yaml.Marshal(s)
}

// ConfigLoadError is the resource type of the last refused config.
type ConfigLoadError = bus.Typed[ConfigLoadErrorSpec]
