package runtime

import "github.com/talosbox/talosbox/internal/bus"

// MachineStageType is the type's name, as Talos has it.
const MachineStageType = "MachineStages.runtime.talos.dev"

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
