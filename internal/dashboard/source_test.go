package dashboard

import (
	"reflect"
	"strings"
	"testing"
)

func TestLineSplitter(t *testing.T) {
	var (
		l     lineSplitter
		lines []string
	)

	add := func(s string) { lines = append(lines, s) }

	for _, chunk := range []string{"one\ntw", "o\r\n", "", "three", "\nfour\nfive"} {
		l.write([]byte(chunk), add)
	}

	// "five" waits for its newline.
	if want := []string{"one", "two", "three", "four"}; !reflect.DeepEqual(lines, want) {
		t.Errorf("lines = %q, want %q", lines, want)
	}
}

func TestSortNodes(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{nil, []string{}},
		{[]string{"10.5.0.10", "10.5.0.2", "10.5.0.2"}, []string{"10.5.0.2", "10.5.0.10"}},
		{[]string{"node-b", "fd00::1", "node-a", "10.0.0.1"}, []string{"10.0.0.1", "fd00::1", "node-a", "node-b"}},
		{[]string{"127.0.0.2:4000", "127.0.0.1:5000", "127.0.0.1:4000"}, []string{"127.0.0.1:4000", "127.0.0.1:5000", "127.0.0.2:4000"}},
	} {
		got := SortNodes(tc.in)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("SortNodes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}

	in := []string{"b", "a"}
	SortNodes(in)

	if in[0] != "b" {
		t.Error("SortNodes changed its argument")
	}
}
