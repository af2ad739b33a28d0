package k8s

import (
	"maps"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// ManifestType is the type's name, as Talos has it.
const ManifestType = "Manifests.kubernetes.talos.dev"

// ManifestSpec is one bootstrap manifest: its objects, in order.
type ManifestSpec struct {
	Items []map[string]any `yaml:"items" json:"items"`
	// Set (talosbox) is a digest of the IDs of all the manifests
	// rendered with this one. The apply controller acts only on a list
	// of manifests whose IDs match it, never on one caught halfway
	// through an update, which could look like removed manifests to
	// prune.
	Set string `yaml:"set,omitempty" json:"set,omitempty"`
	// Error (talosbox) says why the manifest could not be rendered this
	// time (an extraManifests URL that did not download); Items are then
	// the last ones rendered, if any, and its objects are not pruned.
	Error string `yaml:"error,omitempty" json:"error,omitempty"`
}

// Manifest is the resource type of a ManifestSpec.
type Manifest = bus.Typed[ManifestSpec]

// RedactedYAML is the manifest as a caller without os:admin sees it: every
// object, with each value of a Secret's data and stringData masked (the
// bootstrap token's secret among them), so that what a manifest deploys
// can be read but not the credentials it carries.
func (s ManifestSpec) RedactedYAML() ([]byte, error) {
	out := s
	out.Items = make([]map[string]any, len(s.Items))

	for i, item := range s.Items {
		out.Items[i] = item

		if kind, _ := item["kind"].(string); kind != "Secret" {
			continue
		}

		masked := maps.Clone(item)

		for _, field := range []string{"data", "stringData"} {
			values, ok := masked[field].(map[string]any)
			if !ok {
				continue
			}

			m := make(map[string]any, len(values))
			for k := range values {
				m[k] = configs.Redacted
			}

			masked[field] = m
		}

		out.Items[i] = masked
	}

	return yaml.Marshal(out)
}
