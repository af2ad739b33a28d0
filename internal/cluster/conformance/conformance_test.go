package conformance

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EArgsAreAbsolute: ginkgo runs e2e.test in its own directory, so a
// relative --report-dir wrote the report where the run never looked.
func TestE2EArgsAreAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)

	o := Options{E2E: "bin/e2e.test", Kubeconfig: "kubeconfig", Kubectl: "bin/kubectl", ReportDir: "conformance-results/parallel"}
	if err := absPaths(&o); err != nil {
		t.Fatal(err)
	}

	for _, a := range e2eArgs(o) {
		if _, v, ok := strings.Cut(a, "="); ok && strings.Contains(v, "/") && !filepath.IsAbs(v) {
			t.Errorf("%s is relative", a)
		}
	}

	if o.ReportDir != filepath.Join(dir, "conformance-results", "parallel") {
		t.Errorf("report dir %s", o.ReportDir)
	}
}
