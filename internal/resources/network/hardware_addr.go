package network

import "github.com/talosbox/talosbox/internal/bus"

// HardwareAddrType is Talos's type of the node's first hardware address,
// which identifies the machine (ID HardwareAddrFirst).
const (
	HardwareAddrType  = "HardwareAddresses.net.talos.dev"
	HardwareAddrFirst = "first"
)

// HardwareAddrSpec names the link and its MAC address.
type HardwareAddrSpec struct {
	Name         string `yaml:"name" json:"name"`
	HardwareAddr string `yaml:"hardwareAddr" json:"hardwareAddr"`
}

// HardwareAddr is a HardwareAddresses resource.
type HardwareAddr = bus.Typed[HardwareAddrSpec]
