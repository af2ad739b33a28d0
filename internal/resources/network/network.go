package network

import "fmt"

// Namespaces. Layered specs live in ConfigNamespace with IDs
// "<layer>/<id>"; merged specs and everything read from the kernel live in
// Namespace.
const (
	Namespace       = "network"
	ConfigNamespace = "network-config"
)

// ConfigLayer orders the sources of a spec; a higher layer wins the merge.
type ConfigLayer int

// Layers, lowest first (Talos configlayer.go).
const (
	LayerDefault ConfigLayer = iota
	LayerCmdline
	LayerPlatform
	LayerOperator
	LayerConfiguration
)

var layerNames = []string{"default", "cmdline", "platform", "operator", "configuration"}

func (l ConfigLayer) String() string {
	if l < 0 || int(l) >= len(layerNames) {
		return fmt.Sprintf("layer(%d)", int(l))
	}

	return layerNames[l]
}

// MarshalText renders the layer by name in YAML and JSON.
func (l ConfigLayer) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText parses a layer name.
func (l *ConfigLayer) UnmarshalText(b []byte) error {
	for i, n := range layerNames {
		if n == string(b) {
			*l = ConfigLayer(i)
			return nil
		}
	}

	return fmt.Errorf("unknown config layer %q", b)
}

// LayeredID is the ID of a spec in ConfigNamespace.
func LayeredID(layer ConfigLayer, id string) string { return layer.String() + "/" + id }
