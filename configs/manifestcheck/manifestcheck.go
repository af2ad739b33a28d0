// Package manifestcheck refuses the inline manifests a node's manifests
// package refuses, without the Kubernetes decoder talosctl does not link.
package manifestcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Check refuses a manifest (cluster.inlineManifests[].contents) as the
// node's manifests.Inline does: the node splits the stream at "---" lines
// (apimachinery's YAMLReader), converts each document to JSON with
// sigs.k8s.io/yaml (go-yaml v2, keys made strings) and decodes it as an
// unstructured object, which needs a kind, an apiVersion, and objects for
// the items of a list. The same parser and steps give the same answers,
// which the tests hold.
func Check(data []byte) error {
	docs, err := splitDocuments(data)

	for i, doc := range docs {
		if err := checkDocument(doc); err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
	}

	if err != nil {
		return fmt.Errorf("document %d: %w", len(docs)+1, err)
	}

	return nil
}

func checkDocument(doc []byte) error {
	var y any
	if err := yamlv2.Unmarshal(doc, &y); err != nil {
		return err
	}

	j, err := jsonable(y)
	if err != nil {
		return err
	}

	js, err := json.Marshal(j)
	if err != nil {
		return err
	}

	if js = bytes.TrimSpace(js); len(js) == 0 || string(js) == "null" {
		return nil // only comments or whitespace
	}

	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		return err
	}

	kind, _ := obj["kind"].(string)
	if kind == "" {
		return errors.New("object has no kind")
	}

	if api, _ := obj["apiVersion"].(string); api == "" {
		name := ""
		if md, ok := obj["metadata"].(map[string]any); ok {
			name, _ = md["name"].(string)
		}

		return fmt.Errorf("%s %q has no apiVersion", kind, name)
	}

	// Any object whose items are a list is a list, and is expanded.
	if items, ok := obj["items"].([]any); ok {
		for _, it := range items {
			if _, ok := it.(map[string]any); !ok {
				return errors.New("items member is not an object")
			}
		}
	}

	return nil
}

// jsonable is sigs.k8s.io/yaml's conversion of go-yaml v2's maps to
// JSON's string-keyed ones.
func jsonable(v any) (any, error) {
	switch t := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(t))

		for k, x := range t {
			var key string

			switch tk := k.(type) {
			case string:
				key = tk
			case int:
				key = strconv.Itoa(tk)
			case int64:
				key = strconv.FormatInt(tk, 10)
			case float64:
				key = strconv.FormatFloat(tk, 'g', -1, 32)
				switch key {
				case "+Inf":
					key = ".inf"
				case "-Inf":
					key = "-.inf"
				case "NaN":
					key = ".nan"
				}
			case bool:
				key = strconv.FormatBool(tk)
			default:
				return nil, fmt.Errorf("unsupported map key of type: %s, key: %+#v, value: %+#v", reflect.TypeOf(k), k, x)
			}

			var err error
			if out[key], err = jsonable(x); err != nil {
				return nil, err
			}
		}

		return out, nil
	case []any:
		out := make([]any, len(t))

		for i, x := range t {
			var err error
			if out[i], err = jsonable(x); err != nil {
				return nil, err
			}
		}

		return out, nil
	}

	return v, nil
}

// splitDocuments splits a YAML stream as apimachinery's YAMLReader reads
// it: at lines starting "---" followed by nothing but a comment, each
// document with its lines ending in "\n"; a leading separator stays with
// the first document, and an empty one is no document. A separator
// followed by anything else stops the stream with an error.
func splitDocuments(data []byte) ([][]byte, error) {
	var (
		docs [][]byte
		cur  bytes.Buffer
	)

	lines := strings.Split(string(data), "\n")
	last := len(lines) - 1 // the text after the last newline

	for i, line := range lines {
		if i == last && line == "" {
			break
		}

		// A line's end is "\n" or "\r\n" (bufio.Reader.ReadLine).
		if i < last {
			line = strings.TrimSuffix(line, "\r")
		}

		if rest, ok := strings.CutPrefix(line, "---"); ok {
			if t := strings.TrimSpace(rest); t != "" && t[0] != '#' {
				return docs, fmt.Errorf("invalid Yaml document separator: %s", t)
			}

			if cur.Len() != 0 {
				docs = append(docs, bytes.Clone(cur.Bytes()))
				cur.Reset()

				continue
			}
		}

		cur.WriteString(line + "\n")
	}

	if cur.Len() != 0 {
		docs = append(docs, cur.Bytes())
	}

	return docs, nil
}
