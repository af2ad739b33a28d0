package kubeflags

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// testFS holds three releases of two minors, as make images would write
// them.
func testFS(t *testing.T) fstest.MapFS {
	t.Helper()

	fsys := fstest.MapFS{"data/README.md": {Data: []byte("not data")}}

	for _, v := range []string{"1.33.13", "1.34.2", "1.34.12"} {
		b, err := Encode(v, map[string][]Flag{
			APIServer: {{Name: "only-" + v, Type: "bool"}, {Name: "event-ttl", Type: "duration"}},
			Kubelet:   {{Name: "max-pods", Type: "int32"}},
		})
		if err != nil {
			t.Fatal(err)
		}

		fsys["data/v"+v+".json"] = &fstest.MapFile{Data: b}
	}

	return fsys
}

func TestFindMatches(t *testing.T) {
	sets, err := parseAll(testFS(t), "data")
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		component, version string
		match              Match
		from               string // the list's version
	}{
		{APIServer, "1.34.12", Exact, "1.34.12"},
		{APIServer, "v1.34.12", Exact, "1.34.12"},
		{APIServer, "1.34.2", Exact, "1.34.2"},
		{Kubelet, "v1.33.13", Exact, "1.33.13"},
		// Another patch: the newest list of the minor, by number (12 > 2).
		{APIServer, "1.34.0", SameMinor, "1.34.12"},
		{APIServer, "1.34.99", SameMinor, "1.34.12"},
		{APIServer, "v1.33.1", SameMinor, "1.33.13"},
		{APIServer, "1.34", SameMinor, "1.34.12"},
		{APIServer, "1.34.12-rc.1", SameMinor, "1.34.12"},
		{APIServer, "1.35.0", None, ""},
		{APIServer, "2.34.12", None, ""},
		{Scheduler, "1.34.12", None, ""}, // no list for that component
		{"kube-nothing", "1.34.12", None, ""},
		{APIServer, "", None, ""},
		{APIServer, "latest", None, ""},
		{APIServer, "1.34.x", None, ""},
		{APIServer, "1", None, ""},
		{APIServer, "1.34.12.1", None, ""},
		{APIServer, "1.034.12", None, ""},
	} {
		s, m := find(sets, tt.component, tt.version)
		if m != tt.match {
			t.Errorf("%s %s: %s, want %s", tt.component, tt.version, m, tt.match)
			continue
		}

		switch {
		case tt.from == "" && s != nil:
			t.Errorf("%s %s: a set from %s with None", tt.component, tt.version, s.Version())
		case tt.from != "" && (s == nil || s.Version() != tt.from || s.Component() != tt.component):
			t.Errorf("%s %s: set %+v, want %s's %s", tt.component, tt.version, s, tt.from, tt.component)
		}
	}
}

func TestParseAllRefusesMisnamedFiles(t *testing.T) {
	fsys := testFS(t)
	fsys["data/v1.34.13.json"] = fsys["data/v1.34.12.json"]

	if _, err := parseAll(fsys, "data"); err == nil || !strings.Contains(err.Error(), "want the name v1.34.12.json") {
		t.Errorf("a file under another version's name: %v", err)
	}

	fsys = testFS(t)
	fsys["data/v1.34.13.json"] = &fstest.MapFile{Data: []byte("{")}

	if _, err := parseAll(fsys, "data"); err == nil || !strings.Contains(err.Error(), "v1.34.13.json") {
		t.Errorf("a broken file: %v", err)
	}
}

func TestLookupAndSuggest(t *testing.T) {
	s := newSet(APIServer, "1.34.12",
		Flag{Name: "audit-log-maxage", Type: "int"},
		Flag{Name: "audit-log-maxsize", Type: "int"},
		Flag{Name: "event-ttl", Type: "duration"},
		Flag{Name: "v", Type: "Level"},
		Flag{Name: "vmodule", Type: "pattern=N,..."},
		Flag{Name: "insecure-port", Type: "int", Deprecated: true},
	)

	for _, tt := range []struct {
		flag    string
		want    Flag
		found   bool
		suggest string
	}{
		{"event-ttl", Flag{"event-ttl", "duration", false}, true, "event-ttl"},
		{"event_ttl", Flag{"event-ttl", "duration", false}, true, "event-ttl"}, // components normalize _ to -
		{"insecure-port", Flag{"insecure-port", "int", true}, true, "insecure-port"},
		{"audit-log-max-age", Flag{}, false, "audit-log-maxage"},
		{"audit_log_max_age", Flag{}, false, "audit-log-maxage"},
		{"Event-TTL", Flag{}, false, "event-ttl"}, // flags are case-sensitive; the hint is not
		{"event-tl", Flag{}, false, "event-ttl"},
		{"--event-ttl", Flag{}, false, "event-ttl"}, // a key with dashes is no flag name
		{"--", Flag{}, false, ""},
		{"vmodul", Flag{}, false, "vmodule"},
		{"vv", Flag{}, false, "v"},
		{"audit-max", Flag{}, false, ""},
		{"enable-admission-plugins", Flag{}, false, ""},
		{"", Flag{}, false, ""},
	} {
		f, ok := s.Lookup(tt.flag)
		if ok != tt.found || f != tt.want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tt.flag, f, ok, tt.want, tt.found)
		}

		if got := s.Suggest(tt.flag); got != tt.suggest {
			t.Errorf("Suggest(%q) = %q, want %q", tt.flag, got, tt.suggest)
		}
	}

	var none *Set
	if _, ok := none.Lookup("v"); ok {
		t.Error("a nil set found a flag")
	}

	if got := none.Suggest("v"); got != "" {
		t.Errorf("a nil set suggested %q", got)
	}

	if none.Version() != "" || none.Component() != "" {
		t.Errorf("a nil set is of %q %q", none.Component(), none.Version())
	}
}

func newSet(component, version string, flags ...Flag) *Set {
	s := &Set{component: component, version: version, flags: map[string]Flag{}}
	for _, f := range flags {
		s.flags[f.Name] = f
		s.names = append(s.names, f.Name)
	}

	slices.Sort(s.names)

	return s
}

func TestEncodeRoundTripsAndIsStable(t *testing.T) {
	comps := map[string][]Flag{
		Proxy:     {{Name: "masquerade-all", Type: "bool"}, {Name: "bind-address", Type: "string", Deprecated: true}},
		Scheduler: {{Name: "v", Type: "Level"}, {Name: "feature-gates", Type: "mapStringBool"}},
	}

	a, err := Encode("1.34.12", comps)
	if err != nil {
		t.Fatal(err)
	}

	slices.Reverse(comps[Proxy])

	b, err := Encode("1.34.12", comps)
	if err != nil {
		t.Fatal(err)
	}

	if !bytes.Equal(a, b) {
		t.Fatalf("the same flags in another order encode differently:\n%s\n%s", a, b)
	}

	version, got, err := Decode(a)
	if err != nil {
		t.Fatal(err)
	}

	want := map[string][]Flag{
		Proxy:     {{Name: "bind-address", Type: "string", Deprecated: true}, {Name: "masquerade-all", Type: "bool"}},
		Scheduler: {{Name: "feature-gates", Type: "mapStringBool"}, {Name: "v", Type: "Level"}},
	}

	if version != "1.34.12" || len(got) != len(want) {
		t.Fatalf("decoded %s %v", version, got)
	}

	for c, flags := range want {
		if !slices.Equal(got[c], flags) {
			t.Errorf("%s: %+v, want %+v", c, got[c], flags)
		}
	}

	for _, tt := range []struct {
		version string
		comps   map[string][]Flag
	}{
		{"v1.34.12", comps},
		{"1.34", nil},
		{"1.34.12-rc.1", nil},
		{"1.34.12", map[string][]Flag{Proxy: {{Name: "x"}}}},
	} {
		if _, err := Encode(tt.version, tt.comps); err == nil {
			t.Errorf("Encode(%q, %v) accepted", tt.version, tt.comps)
		}
	}

	for _, bad := range []string{
		`{"kubernetes":"1.34.12","components":{"kubelet":{"flags":{}}}}`,
		`{"kubernetes":"x","components":{}}`,
		`{"kubernetes":"1.34.12","components":{"kubelet":{"flags":{"a":"bool"},"deprecated":["b"]}}}`,
	} {
		if _, _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) accepted", bad)
		}
	}
}

// TestEmbeddedData checks what make images generated and go:embed holds:
// every file decodes under its own name, covers every component, and
// re-encodes to the same bytes (so regenerating changes nothing).
func TestEmbeddedData(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("data", "v*.json"))
	if err != nil {
		t.Fatal(err)
	}

	if len(files) == 0 {
		t.Skip("no data generated yet (make images)")
	}

	if got := len(Versions()); got != len(files) {
		t.Errorf("Versions() = %v for %d files", Versions(), len(files))
	}

	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}

		version, comps, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}

		for _, c := range Components {
			if len(comps[c]) < 10 {
				t.Errorf("%s: %s has %d flags", name, c, len(comps[c]))
			}

			s, m := For(c, version)
			if m != Exact || s.Version() != version {
				t.Errorf("For(%s, %s) = %v, %s", c, version, s, m)
			}
		}

		again, err := Encode(version, comps)
		if err != nil {
			t.Fatal(err)
		}

		if !bytes.Equal(again, b) {
			t.Errorf("%s does not re-encode to the same bytes", name)
		}
	}

	if !slices.IsSortedFunc(Versions(), compareVersions) {
		t.Errorf("Versions() = %v, not sorted", Versions())
	}

	if _, err := fs.Stat(data, "data/README.md"); err != nil {
		t.Errorf("the README that keeps data/ embeddable: %v", err)
	}
}
