package hardware

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and the ID of the module Talos makes up from the
// kernel's memory total when SMBIOS lists no memory devices, as Talos has
// them. Other modules are named by their slot: the device locator, then
// the bank locator when there is one, spaces made dashes ("DIMM 0" +
// "P0 CHANNEL A" -> "DIMM-0-P0-CHANNEL-A").
const (
	MemoryModuleType      = "MemoryModules.hardware.talos.dev"
	MemoryModuleUnknownID = "UNKNOWN"
)

// MemoryModuleSpec is one memory module, with Talos's keys.
type MemoryModuleSpec struct {
	Size          uint32 `yaml:"sizeMiB,omitempty"`
	DeviceLocator string `yaml:"deviceLocator,omitempty"`
	BankLocator   string `yaml:"bankLocator,omitempty"`
	// Speed is in MT/s.
	Speed        uint32 `yaml:"speed,omitempty"`
	Manufacturer string `yaml:"manufacturer,omitempty"`
	SerialNumber string `yaml:"serialNumber,omitempty"`
	AssetTag     string `yaml:"assetTag,omitempty"`
	// ProductName is the module's part number.
	ProductName string `yaml:"productName,omitempty"`
}

// MemoryModule is the resource type of one memory module.
type MemoryModule = bus.Typed[MemoryModuleSpec]
