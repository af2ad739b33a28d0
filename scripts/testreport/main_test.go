package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestReportReplaysPlainGoTest runs go test -json on a package with a
// failing test and checks the report reads as plain go test output with
// the timings after it.
func TestReportReplaysPlainGoTest(t *testing.T) {
	cmd := exec.Command("go", "test", "-json", "-count=1", "./testdata/sample")

	events, err := cmd.Output()
	if err == nil {
		t.Fatal("the sample package's failing test passed")
	}

	var out bytes.Buffer

	rep := &report{out: &out, buffered: map[key][]string{}}
	if err := rep.read(bytes.NewReader(events)); err != nil {
		t.Fatal(err)
	}

	rep.summary(5)

	got := out.String()

	for _, want := range []string{
		"bad before its subtests",
		"--- FAIL: TestBad/broken",
		"the broken subtest's reason",
		"--- FAIL: TestBad (",
		"FAIL\tgithub.com/talosbox/talosbox/scripts/testreport/testdata/sample\t",
		"slowest packages (of 1;",
		"slowest tests (of 3):",
		"sample.TestBad  FAIL",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}

	// The failures are repeated last, where a CI log's tail shows them.
	if i := strings.LastIndex(got, "failed tests (1), the last"); i < 0 || !strings.Contains(got[i:], "the broken subtest's reason") || !strings.Contains(got[i:], "sample.TestBad\n") {
		t.Errorf("the report does not end with the failures:\n%s", got)
	}

	// The result line heads each failed test's lines.
	if i, j := strings.Index(got, "--- FAIL: TestBad ("), strings.Index(got, "bad before its subtests"); i < 0 || j < i {
		t.Errorf("TestBad's lines come before its result line:\n%s", got)
	}

	for _, not := range []string{"=== RUN", "good says nothing", "--- PASS", "a passing subtest's line", "\nPASS\n"} {
		if strings.Contains(got, not) {
			t.Errorf("the report has %q, which plain go test does not print:\n%s", not, got)
		}
	}

	if !rep.failed {
		t.Error("the report says nothing failed")
	}
}
