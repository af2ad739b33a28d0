package configpatch

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// Strategic merge follows Talos: mappings merge recursively, scalars are
// replaced, lists are appended to, except for the lists below whose items
// are matched by a key and merged in place, and an extraArgs flag's list,
// which is replaced (configs.IsArgValue). `$patch: delete` in a mapping
// removes it (a whole key, or the matched list item).

const directiveKey = "$patch"

// mergeKeys lists the lists merged by key, by path; "*" stands for any item
// of the enclosing list.
var mergeKeys = map[string][]string{
	"machine.network.interfaces":                  {"interface", "deviceSelector"},
	"machine.network.interfaces.*.vlans":          {"vlanId"},
	"machine.network.interfaces.*.routes":         {"network"},
	"machine.network.interfaces.*.vlans.*.routes": {"network"},
	"machine.files":                               {"path"},
	"cluster.apiServer.admissionControl":          {"name"},
	// Typed documents' lists, under the kind.
	"ExtensionServiceConfig.configFiles": {"mountPath"},
}

type mergeError struct {
	path []string
	line int
	msg  string
}

func (e *mergeError) Error() string {
	return fmt.Sprintf("strategic merge: %s (line %d of the patch): %s", displayPath(e.path), e.line, e.msg)
}

func displayPath(path []string) string {
	if len(path) == 0 {
		return "document root"
	}

	return strings.Join(path, ".")
}

// applyMerge merges the patch mapping into root (which may be nil for an
// empty document) and returns the new root.
func applyMerge(root, patch *yaml.Node) (*yaml.Node, error) {
	if root == nil || isNull(root) {
		// A JSON patch may have replaced the whole document with null.
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}

	if root.Kind != yaml.MappingNode {
		return nil, &mergeError{line: patch.Line, msg: fmt.Sprintf("cannot merge a mapping into %s", kindName(root))}
	}

	if err := mergeMapping(root, patch, nil); err != nil {
		return nil, err
	}

	return root, nil
}

func mergeMapping(dst, src *yaml.Node, path []string) error {
	flow := src.Style&yaml.FlowStyle != 0

	for i := 0; i+1 < len(src.Content); i += 2 {
		key, val := src.Content[i], deref(src.Content[i+1])
		if key.Value == directiveKey {
			continue // acted on by the caller through isDelete
		}

		sub := appendPath(path, key.Value)

		del := isDelete(val)
		j := findKey(dst, key.Value)

		switch {
		case del:
			if j >= 0 {
				dst.Content = append(dst.Content[:j], dst.Content[j+2:]...)
			}
		case j < 0:
			if v := cleanCopy(val, flow); v != nil {
				dst.Content = append(dst.Content, cleanCopy(key, flow), v)
			}
		default:
			merged, err := mergeValue(dst.Content[j+1], val, sub, flow)
			if err != nil {
				return err
			}

			dst.Content[j+1] = merged
		}
	}

	return nil
}

func mergeValue(dst, src *yaml.Node, path []string, inFlow bool) (*yaml.Node, error) {
	src = deref(src)

	if dst.Kind == yaml.AliasNode {
		// Merging into shared (anchored) content would change every user of
		// the anchor; work on a private copy instead.
		dst = expandCopy(dst.Alias)
	}

	// A block patch merged into an empty flow collection (gen config's
	// `network: {}`) makes it block: the flow style would otherwise carry
	// everything merged in onto one line.
	if (dst.Kind == yaml.MappingNode || dst.Kind == yaml.SequenceNode) && dst.Kind == src.Kind && len(dst.Content) == 0 &&
		dst.Style&yaml.FlowStyle != 0 && src.Style&yaml.FlowStyle == 0 && !inFlow && len(src.Content) > 0 {
		dst.Style &^= yaml.FlowStyle
	}

	// A typed document's field Talos marks merge:"replace" is replaced
	// as a whole, and so is one flag of extraArgs, list or not (Talos's
	// Args.Merge), in v1alpha1 too.
	replace := len(path) > 1 && (configs.MergeReplaces(path[0], path[1:]) || configs.IsArgValue(path))

	switch {
	case !replace && dst.Kind == yaml.MappingNode && src.Kind == yaml.MappingNode:
		return dst, mergeMapping(dst, src, path)
	case !replace && dst.Kind == yaml.SequenceNode && src.Kind == yaml.SequenceNode:
		return dst, mergeList(dst, src, path)
	case dst.Kind == yaml.ScalarNode && src.Kind == yaml.ScalarNode && sameScalar(dst, src):
		return dst, nil // keep the original spelling and comments
	default:
		v := cleanCopy(src, inFlow)
		if v == nil {
			return dst, nil
		}

		if v.LineComment == "" {
			v.LineComment = dst.LineComment
		}

		return v, nil
	}
}

func sameScalar(a, b *yaml.Node) bool {
	ja, errA := scalarJSON(a)
	jb, errB := scalarJSON(b)

	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func mergeList(dst, src *yaml.Node, path []string) error {
	keys := mergeKeys[strings.Join(path, ".")]
	itemPath := appendPath(path, "*")
	flow := src.Style&yaml.FlowStyle != 0

	for _, item := range src.Content {
		item = deref(item)
		del := isDelete(item)

		id, ok := identity(item, keys)
		if !ok {
			if del {
				return &mergeError{path: path, line: item.Line,
					msg: "$patch: delete needs a list item identified by " + describeKeys(keys)}
			}

			dst.Content = append(dst.Content, cleanCopy(item, flow))

			continue
		}

		j := -1

		for k, existing := range dst.Content {
			if existingID, ok := identity(existing, keys); ok && existingID == id {
				j = k

				break
			}
		}

		switch {
		case j < 0 && del:
			// Deleting an item that is not there is a no-op, like for keys.
		case j < 0:
			dst.Content = append(dst.Content, cleanCopy(item, flow))
		case del:
			dst.Content = append(dst.Content[:j], dst.Content[j+1:]...)
		default:
			if dst.Content[j].Kind == yaml.AliasNode {
				dst.Content[j] = expandCopy(dst.Content[j].Alias)
			}

			if err := mergeMapping(dst.Content[j], item, itemPath); err != nil {
				return err
			}
		}
	}

	return nil
}

// identity is the merge identity of a list item: the first merge key it
// carries, with its value. Items without one are appended.
func identity(item *yaml.Node, keys []string) (string, bool) {
	if item.Kind == yaml.AliasNode {
		item = item.Alias
	}

	if item.Kind != yaml.MappingNode {
		return "", false
	}

	for _, k := range keys {
		if j := findKey(item, k); j >= 0 {
			v, err := toJSON(item.Content[j+1])
			if err != nil {
				return "", false
			}

			return k + "=" + string(v), true
		}
	}

	return "", false
}

func describeKeys(keys []string) string {
	if len(keys) == 0 {
		return "a merge key (this list is appended to)"
	}

	return strings.Join(keys, " or ")
}

// isDelete reports whether a mapping carries `$patch: delete`.
// checkDirectives has rejected every other use of `$patch` at parse time.
func isDelete(n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}

	j := findKey(n, directiveKey)

	return j >= 0 && n.Content[j+1].Value == "delete"
}

// checkDirectives validates `$patch` keys throughout a patch, so a typo is
// reported instead of being merged as data or silently ignored.
func checkDirectives(n *yaml.Node, path []string, depth int) error {
	if depth > maxDepth {
		return &mergeError{path: path, line: n.Line, msg: "patch nests too deeply"}
	}

	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == directiveKey {
				if v.Kind != yaml.ScalarNode || v.Value != "delete" {
					return &mergeError{path: path, line: v.Line,
						msg: fmt.Sprintf("unsupported %s value %q (only \"delete\" is supported)", directiveKey, v.Value)}
				}

				if depth == 0 && findKey(n, "kind") < 0 {
					return &mergeError{line: k.Line, msg: "$patch: delete cannot remove the whole v1alpha1 document (a typed document, named by its apiVersion, kind and name, can be)"}
				}

				continue
			}

			if err := checkDirectives(v, appendPath(path, k.Value), depth+1); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if err := checkDirectives(item, appendPath(path, "*"), depth+1); err != nil {
				return err
			}
		}
	}

	return nil
}

func findKey(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}

	return -1
}

// cleanCopy deep-copies patch content for insertion: `$patch: delete`
// mappings vanish (deleting what does not exist), aliases are expanded and
// flow style from inline JSON patches becomes block style. Inside flow
// collections scalars also lose their quotes: that is JSON syntax, not a
// choice of the author, and the encoder still quotes whatever would
// otherwise change type. It returns nil when the node itself is deleted.
func cleanCopy(n *yaml.Node, inFlow bool) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return cleanCopy(n.Alias, inFlow)
	}

	if isDelete(n) {
		return nil
	}

	c := *n
	c.Anchor = ""
	c.Line, c.Column = 0, 0

	switch c.Kind {
	case yaml.ScalarNode:
		if inFlow {
			c.Style &^= yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle
		}
	case yaml.MappingNode, yaml.SequenceNode:
		flow := inFlow || c.Style&yaml.FlowStyle != 0
		c.Style &^= yaml.FlowStyle
		c.Content = make([]*yaml.Node, 0, len(n.Content))

		step := 1
		if c.Kind == yaml.MappingNode {
			step = 2
		}

		for i := 0; i+step <= len(n.Content); i += step {
			if step == 2 && n.Content[i].Value == directiveKey {
				continue
			}

			v := cleanCopy(n.Content[i+step-1], flow)
			if v == nil {
				continue
			}

			if step == 2 {
				c.Content = append(c.Content, cleanCopy(n.Content[i], flow))
			}

			c.Content = append(c.Content, v)
		}
	}

	return &c
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}

	return n
}

func appendPath(path []string, elem string) []string {
	out := make([]string, len(path), len(path)+1)
	copy(out, path)

	return append(out, elem)
}
