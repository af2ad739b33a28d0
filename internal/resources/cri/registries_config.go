package cri

import (
	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// The CRI's registry configuration, under Talos's name.
const (
	NamespaceCRI         = "cri"
	RegistriesConfigType = "RegistriesConfigs.cri.talos.dev"
	// RegistriesConfigID names the singleton.
	RegistriesConfigID = "registries"
)

// RegistriesConfigSpec is machine.registries as the CRI applies it: the
// hosts tree and 01-registries.part are rendered from it.
type RegistriesConfigSpec struct {
	Mirrors map[string]configs.RegistryMirror `yaml:"mirrors,omitempty"`
	Config  map[string]configs.RegistryConfig `yaml:"config,omitempty"`
	// Hosts are the registries the hosts tree has a directory for.
	Hosts []string `yaml:"hosts,omitempty"`
}

// RegistriesConfig is the resource type of the CRI's registry config.
type RegistriesConfig = bus.Typed[RegistriesConfigSpec]
