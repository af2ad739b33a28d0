package configpatch

import (
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"gopkg.in/yaml.v3"
)

// applyJSONPatch applies the ops, then maps the result back onto the
// original YAML nodes (see reuse) to keep comments and formatting of what
// did not change.
func applyJSONPatch(root *yaml.Node, ops jsonpatch.Patch) (*yaml.Node, error) {
	doc, err := toJSON(root)
	if err != nil {
		return nil, fmt.Errorf("json patch: convert document: %w", err)
	}

	opts := jsonpatch.NewApplyOptions()
	opts.AccumulatedCopySizeLimit = maxJSONSize
	opts.EscapeHTML = false

	out, err := ops.ApplyWithOptions(doc, opts)
	if err != nil {
		return nil, failedOp(doc, ops, opts, err)
	}

	patched, err := fromJSON(out)
	if err != nil {
		return nil, fmt.Errorf("json patch: %w", err)
	}

	return reuse(root, patched), nil
}

// failedOp finds which op failed by applying growing prefixes of the patch.
// Applying op by op on re-serialised output would be simpler, but the
// library keeps state between the ops of one call, and its results differ
// in corner cases; the whole patch in one call is the reference.
func failedOp(doc []byte, ops jsonpatch.Patch, opts *jsonpatch.ApplyOptions, whole error) error {
	for i := range ops {
		if _, err := ops[:i+1].ApplyWithOptions(doc, opts); err != nil {
			return fmt.Errorf("json patch: op %d (%s): %s", i+1, describeOp(ops[i]), explain(err))
		}
	}

	return fmt.Errorf("json patch: %s", explain(whole))
}

func describeOp(op jsonpatch.Operation) string {
	path, _ := op.Path() // validated in Parse

	if _, ok := op["from"]; ok {
		from, _ := op.From()

		return fmt.Sprintf("%s %s -> %s", op.Kind(), from, path)
	}

	return op.Kind() + " " + path
}

// explain turns the library's error chains into short messages.
func explain(err error) string {
	var sizeErr *jsonpatch.AccumulatedCopySizeError

	switch {
	case errors.Is(err, jsonpatch.ErrTestFailed):
		return "test failed: value differs"
	case errors.Is(err, jsonpatch.ErrMissing):
		return "path not found"
	case errors.Is(err, jsonpatch.ErrInvalidIndex):
		return "invalid array index"
	case errors.As(err, &sizeErr):
		return "copies grow the document beyond 64 MiB"
	default:
		return err.Error()
	}
}

// reuse returns patched, except that every subtree equal to the one at the
// same place in orig is taken from orig, and surviving mapping keys keep
// their original key nodes. A YAML -> JSON -> YAML trip would otherwise drop
// comments and rewrite values such as 0o644 or quoted strings.
func reuse(orig, patched *yaml.Node) *yaml.Node {
	if orig == nil || orig.Kind == yaml.AliasNode || orig.Kind != patched.Kind {
		return patched
	}

	switch patched.Kind {
	case yaml.ScalarNode:
		if sameScalar(orig, patched) {
			return orig
		}

		patched.HeadComment, patched.LineComment = orig.HeadComment, orig.LineComment
	case yaml.MappingNode:
		byKey := make(map[string]int, len(orig.Content)/2)
		for i := 0; i+1 < len(orig.Content); i += 2 {
			byKey[orig.Content[i].Value] = i
		}

		for i := 0; i+1 < len(patched.Content); i += 2 {
			if j, ok := byKey[patched.Content[i].Value]; ok {
				patched.Content[i] = orig.Content[j]
				patched.Content[i+1] = reuse(orig.Content[j+1], patched.Content[i+1])
			}
		}

		copyLayout(orig, patched)
	case yaml.SequenceNode:
		// Positions only line up when the length is unchanged; after an
		// insert or removal the items are taken as patched.
		if len(orig.Content) == len(patched.Content) {
			for i := range patched.Content {
				patched.Content[i] = reuse(orig.Content[i], patched.Content[i])
			}
		}

		copyLayout(orig, patched)
	}

	return patched
}

func copyLayout(from, to *yaml.Node) {
	to.Style = from.Style
	to.Anchor = from.Anchor
	to.HeadComment, to.LineComment, to.FootComment = from.HeadComment, from.LineComment, from.FootComment
}
