//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/cluster/conformance"
)

// conformanceSubset are upstream [Conformance] specs that use no image, so
// they run on a cluster whose image cache holds only the node's own: the
// API's discovery, a ConfigMap's and a Lease's lifecycles, and (in the
// serial pass) patching a Namespace. The whole suite is make conformance's.
var conformanceSubset = []string{
	"should validate PreferredVersion for each APIGroup",
	"should run through a ConfigMap lifecycle",
	"lease API should be available",
	"should patch a Namespace",
}

// testConformanceSubset runs `talosctl conformance kubernetes` in fast
// mode, narrowed to conformanceSubset, with the e2e.test make images built
// from k8s.io/kubernetes: both passes run, the results are where a
// submission wants them, and the closing line counts every spec.
func testConformanceSubset(t *testing.T, dc *dockerCluster, node string) {
	t.Run("conformance subset with the upstream e2e.test", func(t *testing.T) {
		results := filepath.Join(dc.dir, "conformance")

		// The talosctl under test is built apart from _out/bin, where make
		// images put the suite.
		bin, err := filepath.Abs(filepath.Join("_out", "bin"))
		if err != nil {
			t.Fatal(err)
		}

		out := dc.okIn(t, "-n", node, "conformance", "kubernetes", "--mode", "fast", "--parallel", "2",
			"--e2e-binary", filepath.Join(bin, "e2e.test"), "--ginkgo-binary", filepath.Join(bin, "ginkgo"),
			"--kubectl-binary", filepath.Join(bin, "kubectl"),
			"--focus", strings.Join(conformanceSubset, "|"), "--results-dir", results)

		m := regexp.MustCompile(`results in \S+: (\d+) passed, (\d+) failed, (\d+) skipped`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no closing line:\n%s", out)
		}

		if passed, _ := strconv.Atoi(m[1]); passed != len(conformanceSubset) || m[2] != "0" || m[3] != "0" {
			t.Errorf("%s passed, %s failed, %s skipped; want %d passed:\n%s", m[1], m[2], m[3], len(conformanceSubset), out)
		}

		// The serial spec ran in the serial pass, the others beside each other.
		for pass, want := range map[string]int{"parallel": 3, "serial": 1} {
			f, err := os.Open(filepath.Join(results, pass, "junit_01.xml"))
			if err != nil {
				t.Fatal(err)
			}

			s, err := conformance.ParseJUnit(f)
			f.Close()

			if err != nil || s.Passed != want {
				t.Errorf("%s pass: %+v, %v; want %d passed", pass, s, err, want)
			}

			if log, err := os.ReadFile(filepath.Join(results, pass, "e2e.log")); err != nil || !strings.Contains(string(log), "Ran ") {
				t.Errorf("%s pass's e2e.log: %v\n%s", pass, err, log)
			}
		}
	})
}
