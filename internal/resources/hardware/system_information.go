package hardware

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and its one resource's ID, as Talos has them.
const (
	SystemInformationType = "SystemInformations.hardware.talos.dev"
	SystemInformationID   = "systeminformation"
)

// SystemInformationSpec is the machine as SMBIOS describes it, with
// Talos's keys (the serial number's is all lower case in Talos too).
type SystemInformationSpec struct {
	Manufacturer string `yaml:"manufacturer,omitempty"`
	ProductName  string `yaml:"productName,omitempty"`
	Version      string `yaml:"version,omitempty"`
	BIOSVersion  string `yaml:"biosVersion,omitempty"`
	SerialNumber string `yaml:"serialnumber,omitempty"`
	UUID         string `yaml:"uuid,omitempty"`
	WakeUpType   string `yaml:"wakeUpType,omitempty"`
	SKUNumber    string `yaml:"skuNumber,omitempty"`
}

// SystemInformation is the resource type of the machine's description.
type SystemInformation = bus.Typed[SystemInformationSpec]
