package output

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// jsonPath is the small JSONPath subset talosctl needs for print columns
// and `-o jsonpath=`: literal text around {expressions}, where an
// expression is a path of .field, ['field'], [N] and [*] steps (a field
// may escape dots as in kubectl: {.data.service\-account\.key}), or a
// quoted string literal ({"\n"}).
type jsonPath struct {
	parts []jsonPathPart
}

type jsonPathPart struct {
	literal string
	steps   []pathStep // nil for a literal part
}

type pathStep struct {
	field string
	index int  // element N when isIdx; negative counts from the end
	isIdx bool // a subscript rather than a field
	all   bool // [*]
	// filter is [?(@.field=="value")]: the list elements whose field is value.
	filter      bool
	filterValue string
}

func parseJSONPath(expr string) (*jsonPath, error) {
	p := &jsonPath{}
	rest := expr

	for rest != "" {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			p.parts = append(p.parts, jsonPathPart{literal: rest})
			break
		}

		if open > 0 {
			p.parts = append(p.parts, jsonPathPart{literal: rest[:open]})
		}

		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("jsonpath %q: unclosed {", expr)
		}

		inner := strings.TrimSpace(rest[open+1 : open+end])
		rest = rest[open+end+1:]

		if strings.HasPrefix(inner, `"`) {
			lit, err := strconv.Unquote(inner)
			if err != nil {
				return nil, fmt.Errorf("jsonpath %q: bad string literal %s", expr, inner)
			}

			p.parts = append(p.parts, jsonPathPart{literal: lit})

			continue
		}

		steps, err := parsePathSteps(inner)
		if err != nil {
			return nil, fmt.Errorf("jsonpath %q: %w", expr, err)
		}

		p.parts = append(p.parts, jsonPathPart{steps: steps})
	}

	return p, nil
}

func parsePathSteps(s string) ([]pathStep, error) {
	s = strings.TrimPrefix(s, "$")
	steps := []pathStep{}

	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]

			var name strings.Builder

			for s != "" && s[0] != '.' && s[0] != '[' {
				if s[0] == '\\' && len(s) > 1 {
					s = s[1:]
				}

				name.WriteByte(s[0])
				s = s[1:]
			}

			if name.Len() > 0 {
				steps = append(steps, pathStep{field: name.String()})
			}
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ in %q", s)
			}

			in := strings.TrimSpace(s[1:end])
			s = s[end+1:]

			switch {
			case in == "*":
				steps = append(steps, pathStep{isIdx: true, all: true})
			case strings.HasPrefix(in, "?(@.") && strings.HasSuffix(in, ")"):
				field, val, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(in, "?(@."), ")"), "==")
				uq, err := strconv.Unquote(strings.TrimSpace(val))

				if !ok || err != nil {
					return nil, fmt.Errorf("unsupported filter [%s]: want [?(@.field==\"value\")]", in)
				}

				steps = append(steps, pathStep{filter: true, field: strings.TrimSpace(field), filterValue: uq})
			case len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0]:
				steps = append(steps, pathStep{field: in[1 : len(in)-1]})
			default:
				n, err := strconv.Atoi(in)
				if err != nil {
					return nil, fmt.Errorf("unsupported subscript [%s]", in)
				}

				steps = append(steps, pathStep{isIdx: true, index: n})
			}
		default:
			return nil, fmt.Errorf("unexpected %q", s)
		}
	}

	return steps, nil
}

// evalSteps returns the values the steps select from data (decoded YAML/JSON).
func evalSteps(data any, steps []pathStep) []any {
	cur := []any{data}

	for _, st := range steps {
		var next []any

		for _, v := range cur {
			switch {
			case st.filter:
				list, _ := v.([]any)
				for _, e := range list {
					if m, ok := e.(map[string]any); ok && fmt.Sprint(m[st.field]) == st.filterValue {
						next = append(next, e)
					}
				}
			case st.isIdx:
				list, ok := v.([]any)
				if !ok {
					continue
				}

				if st.all {
					next = append(next, list...)
					continue
				}

				i := st.index
				if i < 0 {
					i += len(list)
				}

				if i >= 0 && i < len(list) {
					next = append(next, list[i])
				}
			default:
				if m, ok := v.(map[string]any); ok {
					if x, ok := m[st.field]; ok {
						next = append(next, x)
					}
				}
			}
		}

		cur = next
	}

	return cur
}

// Execute renders the template against data. Several values from one
// expression are joined by spaces, as kubectl does.
func (p *jsonPath) Execute(data any) (string, error) {
	var sb strings.Builder

	for _, part := range p.parts {
		if part.steps == nil {
			sb.WriteString(part.literal)
			continue
		}

		vals := evalSteps(data, part.steps)
		for i, v := range vals {
			if i > 0 {
				sb.WriteByte(' ')
			}

			s, err := scalarString(v)
			if err != nil {
				return "", err
			}

			sb.WriteString(s)
		}
	}

	return sb.String(), nil
}

// scalarString prints strings bare and anything else as JSON.
func scalarString(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "", fmt.Errorf("jsonpath value: %w", err)
		}

		return string(b), nil
	}
}

// normalize turns decoded YAML into JSON-compatible values: maps with
// non-string keys get string keys.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}

		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}

		return m
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}

		return x
	default:
		return v
	}
}
