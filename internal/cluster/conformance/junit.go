package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Summary is what a run of the suite came to.
type Summary struct {
	Passed, Failed, Skipped int
	// Failures names every spec (or suite node) that failed.
	Failures []string
}

func (s Summary) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", s.Passed, s.Failed, s.Skipped)
}

// Add sums two runs (fast mode's parallel and serial passes).
func (s Summary) Add(o Summary) Summary {
	return Summary{
		Passed: s.Passed + o.Passed, Failed: s.Failed + o.Failed, Skipped: s.Skipped + o.Skipped,
		Failures: append(append([]string(nil), s.Failures...), o.Failures...),
	}
}

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string `xml:"name,attr"`
	Status  string `xml:"status,attr"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// ParseJUnit reads the e2e framework's junit_01.xml (Ginkgo's JUnit
// report). Ginkgo lists every spec of the suite, the ones the focus left
// out as plainly "skipped"; those were not run and are not counted. A spec
// that ran and skipped itself ("skipped - <reason>", e2eskipper.Skip) is
// counted as skipped, as Sonobuoy and hydrophone count it. Suite nodes
// (BeforeSuite, ReportAfterSuite...) count only when they fail.
func ParseJUnit(r io.Reader) (Summary, error) {
	var doc junitSuites

	data, err := io.ReadAll(r)
	if err != nil {
		return Summary{}, err
	}

	if err := xml.Unmarshal(data, &doc); err != nil {
		// A single <testsuite> root is JUnit too.
		var one junitSuite
		if err2 := xml.Unmarshal(data, &one); err2 != nil {
			return Summary{}, fmt.Errorf("junit report: %w", err)
		}

		doc.Suites = []junitSuite{one}
	}

	var s Summary

	for _, suite := range doc.Suites {
		for _, c := range suite.Cases {
			spec := strings.HasPrefix(c.Name, "[It]")

			switch c.Status {
			case "passed":
				if spec {
					s.Passed++
				}
			case "skipped":
				if spec && c.Skipped != nil && c.Skipped.Message != "skipped" {
					s.Skipped++
				}
			case "pending":
			default: // failed, timedout, panicked, interrupted, aborted
				s.Failed++
				s.Failures = append(s.Failures, c.Name)
			}
		}
	}

	return s, nil
}
