package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// ParseManifest splits a Kubernetes manifest (inline, or as downloaded) into
// its objects, the rule both validation and the manifest applier use:
// documents separated by "---", empty ones skipped, each a mapping with
// apiVersion, kind and metadata.name (a List's items each such an object),
// since server-side apply can do nothing with anything else. Errors name
// the document (from 1, as an editor counts) and its line.
func ParseManifest(data []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))

	var out []map[string]any

	for doc := 1; ; doc++ {
		var n yaml.Node

		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out, nil
		}

		if err != nil {
			return nil, fmt.Errorf("document %d: %s", doc, trimYAMLPrefix(err.Error()))
		}

		root := documentContent(&n)
		if root == nil {
			continue
		}

		if root.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("document %d (line %d): a manifest document must be a Kubernetes object (a mapping with apiVersion and kind), got %s", doc, root.Line, describe(root))
		}

		var obj map[string]any
		if err := root.Decode(&obj); err != nil {
			return nil, fmt.Errorf("document %d (line %d): %s", doc, root.Line, trimYAMLPrefix(err.Error()))
		}

		objs, err := manifestObjects(obj)
		if err != nil {
			return nil, fmt.Errorf("document %d (line %d): %w", doc, root.Line, err)
		}

		out = append(out, objs...)
	}
}

// manifestObjects checks one document's object, expanding a List.
func manifestObjects(obj map[string]any) ([]map[string]any, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)

	switch {
	case apiVersion == "":
		return nil, fmt.Errorf("the object (kind %q) has no apiVersion", kind)
	case kind == "":
		return nil, fmt.Errorf("the object (apiVersion %q) has no kind", apiVersion)
	}

	if items, isList := obj["items"]; isList && strings.HasSuffix(kind, "List") {
		list, ok := items.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: items must be a list of objects", kind)
		}

		var out []map[string]any

		for i, it := range list {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: items[%d] is not an object", kind, i)
			}

			objs, err := manifestObjects(m)
			if err != nil {
				return nil, fmt.Errorf("%s: items[%d]: %w", kind, i, err)
			}

			out = append(out, objs...)
		}

		return out, nil
	}

	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name == "" {
		return nil, fmt.Errorf("%s %s has no metadata.name", apiVersion, kind)
	}

	return []map[string]any{obj}, nil
}
