// Command testreport reads `go test -json` on standard input and prints what
// a plain `go test` prints (each package's result line, and the whole output
// of every test that failed), then the slowest packages and tests, so the
// time a suite costs is visible where it runs (make unit, CI).
//
//	go test -json ./... | go run ./scripts/testreport [-json FILE] [-top N]
//
// -json keeps the raw events for a later look (jq, or this command again
// with -in FILE). The exit status is 1 when a test or a build failed.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Elapsed    float64
	Output     string
}

type key struct{ pkg, test string }

type timing struct {
	name    string
	elapsed time.Duration
	failed  bool
}

type report struct {
	out      io.Writer
	buffered map[key][]string // a running test's output, printed if it fails
	packages []timing
	tests    []timing
	failed   bool
	// failures keep the last lines of each failed top-level test, printed
	// again at the very end: CI logs are read from their tail, and a long
	// test's reason would otherwise sit thousands of lines above it.
	failures []failure
}

type failure struct {
	name  string
	lines []string
}

// tailLines is how many of a failed test's last lines the summary repeats.
const tailLines = 15

func main() {
	in := flag.String("in", "", "read the events from `FILE` instead of standard input")
	keep := flag.String("json", "", "also write the events to `FILE`")
	top := flag.Int("top", 15, "list the `N` slowest packages and tests")
	flag.Parse()

	var r io.Reader = os.Stdin

	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()

		r = f
	}

	if *keep != "" {
		f, err := os.Create(*keep)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()

		r = io.TeeReader(r, f)
	}

	rep := &report{out: os.Stdout, buffered: map[key][]string{}}
	if err := rep.read(r); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}

	rep.summary(*top)

	if rep.failed {
		os.Exit(1)
	}
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)

	for sc.Scan() {
		line := sc.Bytes()

		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			// Not an event (go vet's or the linker's words): as it came.
			fmt.Fprintf(r.out, "%s\n", line)
			continue
		}

		r.handle(ev)
	}

	return sc.Err()
}

func (r *report) handle(ev event) {
	k := key{ev.Package, ev.Test}

	switch ev.Action {
	case "build-output":
		fmt.Fprint(r.out, ev.Output)
	case "build-fail":
		r.failed = true
	case "output":
		if ev.Test == "" {
			r.packageOutput(ev.Output)
		} else {
			r.buffered[k] = append(r.buffered[k], ev.Output)
		}
	case "pass", "skip":
		if ev.Test != "" {
			r.record(k, ev, false)
			r.dropTest(k)

			// A passing subtest says nothing, even in a failing parent.
			if strings.Contains(k.test, "/") {
				delete(r.buffered, k)
			}
		} else {
			r.packages = append(r.packages, timing{ev.Package, seconds(ev.Elapsed), false})
		}
	case "fail":
		r.failed = true

		if ev.Test != "" {
			r.record(k, ev, true)

			// A subtest's lines were its own; the parent prints its own
			// and then its subtests' (go test prints them nested).
			if !strings.Contains(ev.Test, "/") {
				r.flushTest(k)
			}
		} else {
			r.flushPackage(ev.Package)
			r.packages = append(r.packages, timing{ev.Package, seconds(ev.Elapsed), true})
		}
	}
}

// packageOutput prints what non-verbose go test prints of a package's own
// lines: not the verbose markers -json turns on.
func (r *report) packageOutput(s string) {
	if s == "PASS\n" || strings.HasPrefix(s, "=== ") || strings.HasPrefix(s, "--- PASS") || strings.HasPrefix(s, "--- SKIP") {
		return
	}

	fmt.Fprint(r.out, s)
}

func (r *report) record(k key, ev event, failed bool) {
	if !strings.Contains(k.test, "/") {
		r.tests = append(r.tests, timing{k.pkg + "." + k.test, seconds(ev.Elapsed), failed})
	}
}

// dropTest forgets a passed test's output. A subtest's stays with its
// parent's until the parent ends: a failing parent prints them all.
func (r *report) dropTest(k key) {
	if !strings.Contains(k.test, "/") {
		for kk := range r.buffered {
			if kk.pkg == k.pkg && (kk.test == k.test || strings.HasPrefix(kk.test, k.test+"/")) {
				delete(r.buffered, kk)
			}
		}
	}
}

// flushTest prints a failed top-level test's output and its subtests'.
func (r *report) flushTest(k key) {
	var names []string

	for kk := range r.buffered {
		if kk.pkg == k.pkg && (kk.test == k.test || strings.HasPrefix(kk.test, k.test+"/")) {
			names = append(names, kk.test)
		}
	}

	slices.Sort(names)

	var all []string

	for _, n := range names {
		// The result line heads the test's lines, as go test prints them.
		lines := slices.DeleteFunc(slices.Clone(r.buffered[key{k.pkg, n}]), func(l string) bool { return strings.HasPrefix(l, "=== ") })
		slices.SortStableFunc(lines, func(a, b string) int {
			return cmp.Compare(resultRank(a), resultRank(b))
		})

		for _, l := range lines {
			fmt.Fprint(r.out, l)
		}

		all = append(all, lines...)

		delete(r.buffered, key{k.pkg, n})
	}

	if len(all) > 0 {
		r.failures = append(r.failures, failure{name: k.pkg + "." + k.test, lines: all[max(0, len(all)-tailLines):]})
	}
}

// flushPackage prints what tests of a failed package left unprinted: the
// test that was running when it panicked or timed out.
func (r *report) flushPackage(pkg string) {
	for kk := range r.buffered {
		if kk.pkg == pkg && !strings.Contains(kk.test, "/") {
			r.flushTest(kk)
		}
	}
}

func (r *report) summary(top int) {
	if top <= 0 {
		return
	}

	slow := func(title string, list []timing) {
		slices.SortStableFunc(list, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })

		fmt.Fprintf(r.out, "\n%s\n", title)

		for _, t := range list[:min(top, len(list))] {
			mark := ""
			if t.failed {
				mark = "  FAIL"
			}

			fmt.Fprintf(r.out, "  %9s  %s%s\n", t.elapsed.Round(100*time.Millisecond), t.name, mark)
		}
	}

	var total time.Duration
	for _, p := range r.packages {
		total += p.elapsed
	}

	slow(fmt.Sprintf("slowest packages (of %d; %s summed, packages run in parallel):", len(r.packages), total.Round(time.Second)), r.packages)
	slow(fmt.Sprintf("slowest tests (of %d):", len(r.tests)), r.tests)

	if len(r.failures) > 0 {
		fmt.Fprintf(r.out, "\nfailed tests (%d), the last %d lines of each (the whole output is above):\n", len(r.failures), tailLines)

		for _, f := range r.failures {
			fmt.Fprintf(r.out, "--- %s\n", f.name)

			for _, l := range f.lines {
				fmt.Fprint(r.out, l)
			}
		}
	}
}

func resultRank(l string) int {
	if strings.HasPrefix(strings.TrimLeft(l, " "), "--- FAIL") {
		return 0
	}

	return 1
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
