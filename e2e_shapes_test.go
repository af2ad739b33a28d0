//go:build e2e

package main

import (
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// table is talosctl's tabular output parsed by the header's column
// positions, so a row that does not line up with its header is an error.
type table struct {
	header []string
	rows   []map[string]string
}

// parseTable checks that out starts with exactly the columns given
// (three spaces apart at least, as talosctl aligns them) and cuts every
// row at the header's column starts.
func parseTable(t *testing.T, out string, columns ...string) table {
	t.Helper()

	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	head := []rune(lines[0])

	starts := make([]int, len(columns))
	pos := 0

	for i, col := range columns {
		idx := strings.Index(string(head[pos:]), col)
		if idx < 0 {
			t.Fatalf("header %q lacks column %q (want %q)", lines[0], col, columns)
		}

		idx = len([]rune(string(head[pos:])[:idx])) + pos
		if i > 0 && (idx < pos+3 || strings.TrimSpace(string(head[pos:idx])) != "") {
			t.Fatalf("header %q: column %q is not three or more spaces after %q", lines[0], col, columns[i-1])
		}

		starts[i] = idx
		pos = idx + len([]rune(col))
	}

	if pos != len(head) {
		t.Fatalf("header %q has more than %q", lines[0], columns)
	}

	tb := table{header: columns}

	for _, line := range lines[1:] {
		r := []rune(line)
		row := map[string]string{}

		for i, col := range columns {
			if starts[i] > len(r) {
				row[col] = ""
				continue
			}

			if i > 0 && starts[i] > 0 && starts[i] <= len(r) && r[starts[i]-1] != ' ' {
				t.Fatalf("row %q is not aligned with header %q at column %q", line, lines[0], col)
			}

			end := len(r)
			if i+1 < len(columns) && starts[i+1]-1 < len(r) {
				end = starts[i+1] - 1
			}

			row[col] = strings.TrimSpace(string(r[starts[i]:end]))
		}

		tb.rows = append(tb.rows, row)
	}

	return tb
}

// find returns the rows whose column col is value.
func (tb table) find(col, value string) []map[string]string {
	var out []map[string]string

	for _, r := range tb.rows {
		if r[col] == value {
			out = append(out, r)
		}
	}

	return out
}

// one returns the single row whose col is value.
func (tb table) one(t *testing.T, col, value string) map[string]string {
	t.Helper()

	rows := tb.find(col, value)
	if len(rows) != 1 {
		t.Fatalf("%d rows with %s=%q, want 1: %v", len(rows), col, value, tb.rows)
	}

	return rows[0]
}

// column is every row's value of col, in order.
func (tb table) column(col string) []string {
	out := make([]string, len(tb.rows))
	for i, r := range tb.rows {
		out[i] = r[col]
	}

	return out
}

// resourceDoc is a resource as `get -o yaml` and `-o json` print it.
type resourceDoc struct {
	Node     string `yaml:"node" json:"node"`
	Metadata struct {
		Namespace string `yaml:"namespace" json:"namespace"`
		Type      string `yaml:"type" json:"type"`
		ID        string `yaml:"id" json:"id"`
		Version   uint64 `yaml:"version" json:"version"`
		Phase     string `yaml:"phase" json:"phase"`
	} `yaml:"metadata" json:"metadata"`
	Spec map[string]any `yaml:"spec" json:"spec"`
}

// yamlDocs decodes a `---`-separated stream of resources.
func yamlDocs(t *testing.T, out string) []resourceDoc {
	t.Helper()

	var docs []resourceDoc

	dec := yaml.NewDecoder(strings.NewReader(out))

	for {
		var d resourceDoc

		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}

		if err != nil {
			t.Fatalf("yaml output does not parse: %v\n%s", err, out)
		}

		docs = append(docs, d)
	}
}

// jsonDocs decodes the concatenated JSON objects of `-o json`.
func jsonDocs(t testing.TB, out string) []resourceDoc {
	t.Helper()

	var docs []resourceDoc

	dec := json.NewDecoder(strings.NewReader(out))

	for {
		var d resourceDoc

		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}

		if err != nil {
			t.Fatalf("json output does not parse: %v\n%s", err, out)
		}

		docs = append(docs, d)
	}
}

// matches fails unless out matches the regular expression (anchored by
// the caller as needed).
func matches(t *testing.T, what, out, re string) {
	t.Helper()

	if !regexp.MustCompile(re).MatchString(out) {
		t.Fatalf("%s does not match %s:\n%s", what, re, out)
	}
}

// dig walks nested mappings of a decoded document.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}

		v = m[k]
	}

	return v
}
