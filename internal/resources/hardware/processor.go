package hardware

import "github.com/talosbox/talosbox/internal/bus"

// ProcessorType is the type's name, as Talos has it. A resource is one
// populated socket; its ID is the socket designation with spaces made
// dashes ("CPU 0" -> "CPU-0").
const ProcessorType = "Processors.hardware.talos.dev"

// ProcessorSpec is one processor, with Talos's keys.
type ProcessorSpec struct {
	Socket       string `yaml:"socket,omitempty"`
	Manufacturer string `yaml:"manufacturer,omitempty"`
	ProductName  string `yaml:"productName,omitempty"`
	// MaxSpeed and BootSpeed are in MHz.
	MaxSpeed  uint32 `yaml:"maxSpeedMhz,omitempty"`
	BootSpeed uint32 `yaml:"bootSpeedMhz,omitempty"`
	// Status is SMBIOS's raw status byte.
	Status       uint32 `yaml:"status,omitempty"`
	SerialNumber string `yaml:"serialNumber,omitempty"`
	AssetTag     string `yaml:"assetTag,omitempty"`
	PartNumber   string `yaml:"partNumber,omitempty"`
	CoreCount    uint32 `yaml:"coreCount,omitempty"`
	CoreEnabled  uint32 `yaml:"coreEnabled,omitempty"`
	ThreadCount  uint32 `yaml:"threadCount,omitempty"`
}

// Processor is the resource type of one processor.
type Processor = bus.Typed[ProcessorSpec]
