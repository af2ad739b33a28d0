// Package sample is testreport's input: a pass, a failure with subtests,
// and a skip, run by TestReportReplaysPlainGoTest through go test -json.
package sample

import "testing"

func TestGood(t *testing.T) { t.Log("good says nothing when it passes") }

func TestBad(t *testing.T) {
	t.Log("bad before its subtests")
	t.Run("fine", func(t *testing.T) { t.Log("a passing subtest's line") })
	t.Run("broken", func(t *testing.T) { t.Error("the broken subtest's reason") })
}

func TestSkipped(t *testing.T) { t.Skip("not here") }
