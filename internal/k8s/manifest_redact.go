package k8s

import (
	"maps"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

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
