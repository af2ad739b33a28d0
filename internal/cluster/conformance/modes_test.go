package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCertifiedDir(t *testing.T) {
	for _, tc := range []struct{ k, want string }{
		{"1.34.12", "out/v1.34/talosbox"},
		{"v1.33.13", "out/v1.33/talosbox"},
	} {
		if got := CertifiedDir("out", tc.k); got != tc.want {
			t.Errorf("CertifiedDir(%q) = %q, want %q", tc.k, got, tc.want)
		}
	}
}

// TestParseJUnit reads a report e2e.test wrote (three conformance specs
// passed, the rest of the suite left out by the filter, trimmed), with a
// spec that skipped itself and one that failed added in Ginkgo's shapes:
// left-out specs are not counted, suite nodes only if they fail.
func TestParseJUnit(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "junit_01.xml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	s, err := ParseJUnit(f)
	if err != nil {
		t.Fatal(err)
	}

	if s.String() != "3 passed, 1 failed, 1 skipped" {
		t.Errorf("summary %q, want 3 passed, 1 failed, 1 skipped", s)
	}

	if len(s.Failures) != 1 || !strings.Contains(s.Failures[0], "Example should fail") {
		t.Errorf("failures %q", s.Failures)
	}

	if _, err := ParseJUnit(strings.NewReader("<testsuites><testsuite")); err == nil {
		t.Error("a truncated report parsed")
	}
}
