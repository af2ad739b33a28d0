package runtime

import "github.com/talosbox/talosbox/internal/bus"

// ExtensionStatusType is Talos's type of an installed system extension;
// IDs are the extensions' indexes, "0", "1", ... in name order.
const ExtensionStatusType = "ExtensionStatuses.runtime.talos.dev"

// ExtensionStatusSpec is Talos's extension layer: the image it came in
// and its manifest's metadata.
type ExtensionStatusSpec struct {
	Image    string            `yaml:"image"`
	Metadata ExtensionMetadata `yaml:"metadata"`
}

// ExtensionMetadata is a manifest.yaml's metadata.
type ExtensionMetadata struct {
	Name          string                 `yaml:"name"`
	Version       string                 `yaml:"version"`
	Author        string                 `yaml:"author,omitempty"`
	Description   string                 `yaml:"description,omitempty"`
	Compatibility ExtensionCompatibility `yaml:"compatibility,omitempty"`
}

// ExtensionCompatibility is the Talos versions an extension declares it
// works with.
type ExtensionCompatibility struct {
	Talos struct {
		Version string `yaml:"version,omitempty"`
	} `yaml:"talos,omitempty"`
}

// ExtensionStatus is an ExtensionStatuses resource.
type ExtensionStatus = bus.Typed[ExtensionStatusSpec]
