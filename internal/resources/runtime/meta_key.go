package runtime

import (
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// MetaKeyType mirrors one META tag, as Talos names it: ID "0x%02x", spec
// {value}.
const MetaKeyType = "MetaKeys.runtime.talos.dev"

// MetaKeySpec is a tag's value.
type MetaKeySpec struct {
	Value string `yaml:"value"`
	// Secret: the value may hold key material, shown to admins only.
	Secret bool `yaml:"-" json:"-"`
}

// RedactedYAML is the spec as a caller without os:admin sees it.
func (s MetaKeySpec) RedactedYAML() ([]byte, error) {
	if s.Secret {
		s.Value = configs.Redacted
	}

	return yaml.Marshal(s)
}

// MetaKey is the resource type of one META tag.
type MetaKey = bus.Typed[MetaKeySpec]
