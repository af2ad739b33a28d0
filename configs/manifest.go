package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs/manifestcheck"
)

// checkManifest refuses a manifest (inline, or as downloaded) as the node
// would: what its Kubernetes decoder refuses (manifestcheck, held to the
// node's decoder by its tests), and objects server-side apply can do
// nothing with, which have no metadata.name. The decoder's own words are
// Go's ("cannot unmarshal array into ..."), so where the structure is the
// trouble it is said in the config's terms; errors name the document
// (from 1, as an editor counts) and its line.
func checkManifest(data []byte) error {
	nodeErr := manifestcheck.Check(data)

	shapeErr, parsed := manifestShape(data)

	switch {
	case nodeErr != nil && shapeErr != nil && parsed:
		return shapeErr
	case nodeErr != nil:
		return nodeErr
	case parsed:
		return shapeErr
	default:
		// The node's decoder took what this stricter parser did not:
		// nothing here to add.
		return nil
	}
}

// manifestShape checks each document's structure; parsed is false when
// the YAML itself did not parse here.
func manifestShape(data []byte) (err error, parsed bool) { //nolint:revive // the flag qualifies the error
	dec := yaml.NewDecoder(bytes.NewReader(data))

	for doc := 1; ; doc++ {
		var n yaml.Node

		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return nil, true
		}

		if err != nil {
			return fmt.Errorf("document %d: %s", doc, trimYAMLPrefix(err.Error())), false
		}

		root := documentContent(&n)
		if root == nil {
			continue
		}

		if root.Kind != yaml.MappingNode {
			return fmt.Errorf("document %d (line %d): a manifest document must be a Kubernetes object (a mapping with apiVersion and kind), got %s", doc, root.Line, describe(root)), true
		}

		var obj map[string]any
		if err := root.Decode(&obj); err != nil {
			return fmt.Errorf("document %d (line %d): %s", doc, root.Line, trimYAMLPrefix(err.Error())), false
		}

		if err := manifestObject(obj); err != nil {
			return fmt.Errorf("document %d (line %d): %w", doc, root.Line, err), true
		}
	}
}

// manifestObject checks one object, a List's items included.
func manifestObject(obj map[string]any) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)

	switch {
	case apiVersion == "":
		return fmt.Errorf("the object (kind %q) has no apiVersion", kind)
	case kind == "":
		return fmt.Errorf("the object (apiVersion %q) has no kind", apiVersion)
	}

	if items, isList := obj["items"]; isList && strings.HasSuffix(kind, "List") {
		list, ok := items.([]any)
		if !ok {
			return fmt.Errorf("%s: items must be a list of objects", kind)
		}

		for i, it := range list {
			m, ok := it.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: items[%d] is not an object", kind, i)
			}

			if err := manifestObject(m); err != nil {
				return fmt.Errorf("%s: items[%d]: %w", kind, i, err)
			}
		}

		return nil
	}

	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name == "" {
		return fmt.Errorf("%s %s has no metadata.name: server-side apply needs one", apiVersion, kind)
	}

	return nil
}
