// Package output prints resources in `talosctl get -o`'s formats: table,
// yaml, json and jsonpath=TEMPLATE, as Talos's talosctl output package does.
package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/resource"
)

// Writer prints resources in one of `get -o`'s formats. Calls come
// from one goroutine at a time (the get command serializes node streams).
type Writer interface {
	// Header is called once, with the definition of the listed type.
	Header(def *resource.ResourceDefinition, watch bool) error
	// Resource prints one resource (or one watch event about it).
	Resource(node string, r *resource.Resource, event resource.WatchResponse_EventType) error
	// Flush ends a batch: the whole listing, or a watch's bootstrap and
	// each later event.
	Flush() error
}

// New is the writer for format (table, yaml, json, jsonpath=TEMPLATE).
func New(format string, w io.Writer) (Writer, error) {
	switch {
	case format == "table":
		return &tableWriter{w: w}, nil
	case format == "yaml":
		return &yamlWriter{w: w}, nil
	case format == "json":
		return &jsonWriter{w: w}, nil
	case strings.HasPrefix(format, "jsonpath="):
		p, err := parseJSONPath(strings.TrimPrefix(format, "jsonpath="))
		if err != nil {
			return nil, err
		}

		return &jsonPathWriter{w: w, path: p}, nil
	default:
		return nil, fmt.Errorf("output format %q is not supported: use table, yaml, json or jsonpath=TEMPLATE", format)
	}
}

// DisplayType is the singular short name Talos shows in tables
// ("Manifests.kubernetes.talos.dev" -> "Manifest", "MachineStatuses..." ->
// "MachineStatus"); our definitions carry only the plural full name.
func DisplayType(typ string) string {
	s, _, _ := strings.Cut(typ, ".")

	switch {
	case strings.HasSuffix(s, "ies"):
		return strings.TrimSuffix(s, "ies") + "y"
	case strings.HasSuffix(s, "sses"), strings.HasSuffix(s, "uses"),
		strings.HasSuffix(s, "xes"), strings.HasSuffix(s, "ches"), strings.HasSuffix(s, "shes"):
		return strings.TrimSuffix(s, "es")
	case strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss"):
		return strings.TrimSuffix(s, "s")
	default:
		return s
	}
}

// specValue decodes a spec for JSONPath and JSON output.
func specValue(r *resource.Resource) (any, error) {
	var v any
	if err := yaml.Unmarshal(r.GetSpecYaml(), &v); err != nil {
		return nil, fmt.Errorf("resource %s: spec: %w", r.GetMetadata().GetId(), err)
	}

	return normalize(v), nil
}

var eventMarkers = map[resource.WatchResponse_EventType]string{
	resource.WatchResponse_CREATED:   "+",
	resource.WatchResponse_UPDATED:   "~",
	resource.WatchResponse_DESTROYED: "-",
}

// tableWriter aligns like talosctl's tabwriter tables, but remembers the
// column widths across flushes, so a watch's later events line up with
// the initial listing.
type tableWriter struct {
	w       io.Writer
	watch   bool
	display string
	columns []*jsonPath
	widths  []int
	rows    [][]string
}

func (t *tableWriter) row(values []string) {
	t.rows = append(t.rows, values)
}

func (t *tableWriter) Header(def *resource.ResourceDefinition, watch bool) error {
	t.watch = watch
	t.display = DisplayType(def.GetType())

	fields := []string{"NODE", "NAMESPACE", "TYPE", "ID", "VERSION"}
	if watch {
		fields = append([]string{"NODE", "*"}, fields[1:]...)
	}

	for _, c := range def.GetPrintColumns() {
		p, err := parseJSONPath(c.GetJsonPath())
		if err != nil {
			return fmt.Errorf("print column %s: %w", c.GetName(), err)
		}

		t.columns = append(t.columns, p)
		fields = append(fields, c.GetName())
	}

	t.row(fields)

	return nil
}

func (t *tableWriter) Resource(node string, r *resource.Resource, event resource.WatchResponse_EventType) error {
	m := r.GetMetadata()

	// A listing may join types (get kcpc: one per component): each row
	// says its own.
	display := t.display
	if typ := m.GetType(); typ != "" {
		display = DisplayType(typ)
	}

	values := []string{node, m.GetNamespace(), display, m.GetId(), strconv.FormatUint(m.GetVersion(), 10)}

	if t.watch {
		values = append([]string{node, eventMarkers[event]}, values[1:]...)
	}

	if len(t.columns) > 0 {
		spec, err := specValue(r)
		if err != nil {
			return err
		}

		for _, c := range t.columns {
			v, err := c.Execute(spec)
			if err != nil {
				return err
			}

			values = append(values, v)
		}
	}

	t.row(values)

	return nil
}

func (t *tableWriter) Flush() error {
	for _, r := range t.rows {
		for i, v := range r {
			if i >= len(t.widths) {
				t.widths = append(t.widths, 0)
			}

			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(v))
		}
	}

	var sb strings.Builder

	for _, r := range t.rows {
		for i, v := range r {
			sb.WriteString(v)

			if i < len(r)-1 {
				sb.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(v)+3))
			}
		}

		sb.WriteByte('\n')
	}

	t.rows = t.rows[:0]

	_, err := io.WriteString(t.w, sb.String())

	return err
}

// resourceDoc is a resource as `-o yaml` prints it: node, metadata, spec,
// with the spec's own key order kept.
func resourceDoc(node string, r *resource.Resource, event resource.WatchResponse_EventType, watch bool) (*yaml.Node, error) {
	m := r.GetMetadata()
	doc := &yaml.Node{Kind: yaml.MappingNode}

	add := func(parent *yaml.Node, key string, value *yaml.Node) {
		parent.Content = append(parent.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, value)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

	add(doc, "node", str(node))

	if watch {
		add(doc, "event", str(strings.ToLower(event.String())))
	}

	meta := &yaml.Node{Kind: yaml.MappingNode}
	add(meta, "namespace", str(m.GetNamespace()))
	add(meta, "type", str(m.GetType()))
	add(meta, "id", str(m.GetId()))
	add(meta, "version", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(m.GetVersion(), 10)})

	if m.GetOwner() != "" {
		add(meta, "owner", str(m.GetOwner()))
	}

	add(meta, "phase", str(m.GetPhase()))

	for _, ts := range []struct {
		key string
		t   time.Time
		ok  bool
	}{{"created", m.GetCreated().AsTime(), m.GetCreated() != nil}, {"updated", m.GetUpdated().AsTime(), m.GetUpdated() != nil}} {
		if ts.ok {
			add(meta, ts.key, str(ts.t.UTC().Format(time.RFC3339)))
		}
	}

	if len(m.GetLabels()) > 0 {
		labels := &yaml.Node{}
		if err := labels.Encode(m.GetLabels()); err != nil {
			return nil, fmt.Errorf("labels: %w", err)
		}

		add(meta, "labels", labels)
	}

	if len(m.GetFinalizers()) > 0 {
		fin := &yaml.Node{Kind: yaml.SequenceNode}
		for _, f := range m.GetFinalizers() {
			fin.Content = append(fin.Content, str(f))
		}

		add(meta, "finalizers", fin)
	}

	add(doc, "metadata", meta)

	var spec yaml.Node
	if err := yaml.Unmarshal(r.GetSpecYaml(), &spec); err != nil {
		return nil, fmt.Errorf("resource %s: spec: %w", m.GetId(), err)
	}

	switch {
	case multiDocument(r.GetSpecYaml()):
		// A machine config of several documents (the v1alpha1 one and
		// typed ones) is shown whole, as its text, as Talos shows it.
		add(doc, "spec", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.LiteralStyle, Value: string(r.GetSpecYaml())})
	case len(spec.Content) > 0:
		add(doc, "spec", spec.Content[0])
	default:
		add(doc, "spec", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"})
	}

	return doc, nil
}

// multiDocument reports whether a spec is a stream of more than one YAML
// document.
func multiDocument(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))

	for n := 0; ; n++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return n > 1
		}
	}
}

type yamlWriter struct {
	w     io.Writer
	watch bool
	n     int
}

func (y *yamlWriter) Header(_ *resource.ResourceDefinition, watch bool) error {
	y.watch = watch
	return nil
}

func (y *yamlWriter) Resource(node string, r *resource.Resource, event resource.WatchResponse_EventType) error {
	doc, err := resourceDoc(node, r, event, y.watch)
	if err != nil {
		return err
	}

	var buf bytes.Buffer

	if y.n > 0 {
		buf.WriteString("---\n")
	}

	y.n++

	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)

	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode %s: %w", r.GetMetadata().GetId(), err)
	}

	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode %s: %w", r.GetMetadata().GetId(), err)
	}

	_, err = y.w.Write(buf.Bytes())

	return err
}

func (y *yamlWriter) Flush() error { return nil }

// jsonResource builds the value -o json and -o jsonpath see: node,
// metadata and spec, with the spec decoded from its YAML.
func jsonResource(node string, r *resource.Resource) (map[string]any, error) {
	doc, err := resourceDoc(node, r, 0, false)
	if err != nil {
		return nil, err
	}

	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, fmt.Errorf("resource %s: %w", r.GetMetadata().GetId(), err)
	}

	m, _ := normalize(v).(map[string]any)

	return m, nil
}

type jsonWriter struct {
	w     io.Writer
	watch bool
}

func (j *jsonWriter) Header(_ *resource.ResourceDefinition, watch bool) error {
	j.watch = watch
	return nil
}

func (j *jsonWriter) Resource(node string, r *resource.Resource, event resource.WatchResponse_EventType) error {
	v, err := jsonResource(node, r)
	if err != nil {
		return err
	}

	if j.watch {
		v["event"] = strings.ToLower(event.String())
	}

	enc := json.NewEncoder(j.w)
	enc.SetIndent("", "    ")

	return enc.Encode(v)
}

func (j *jsonWriter) Flush() error { return nil }

type jsonPathWriter struct {
	w    io.Writer
	path *jsonPath
}

func (j *jsonPathWriter) Header(*resource.ResourceDefinition, bool) error { return nil }

func (j *jsonPathWriter) Resource(node string, r *resource.Resource, _ resource.WatchResponse_EventType) error {
	v, err := jsonResource(node, r)
	if err != nil {
		return err
	}

	out, err := j.path.Execute(v)
	if err != nil {
		return err
	}

	_, err = fmt.Fprintln(j.w, out)

	return err
}

func (j *jsonPathWriter) Flush() error { return nil }
