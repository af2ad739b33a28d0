// Package conformance runs the upstream Kubernetes end-to-end suite
// (e2e.test, built from k8s.io/kubernetes by make images) against a
// cluster from this host, as `e2e.test` runs in CI and as hydrophone and
// Sonobuoy run it in a pod: the [Conformance] specs, in Talos's two modes.
// Results are written as the CNCF submission wants them (e2e.log and
// junit_01.xml), and a run ends with "N passed, N failed, N skipped".
package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The modes pick specs by the Ginkgo labels the e2e framework gives them
// (framework.ConformanceIt, WithSerial), so that a user's --focus and
// --skip stay free to narrow them: every conformance spec, the ones that
// may run beside others, and the ones that must run alone.
const (
	Conformance         = "Conformance"
	ConformanceParallel = "Conformance && !Serial"
	ConformanceSerial   = "Conformance && Serial"
)

// Options say what to run and where.
type Options struct {
	// E2E is the e2e.test binary; Ginkgo the ginkgo CLI, needed only when
	// Parallel is above 1; Kubectl the kubectl the kubectl specs run.
	E2E, Ginkgo, Kubectl string
	// Kubeconfig is the admin kubeconfig of the cluster.
	Kubeconfig string
	// Labels is a Ginkgo label filter (one of the modes' above).
	Labels string
	// Focus and Skip are Ginkgo regular expressions over the spec names.
	Focus, Skip string
	// Parallel is how many Ginkgo processes run specs at once; 0 or 1 runs
	// e2e.test itself, one spec at a time, as certified mode must.
	Parallel int
	// ReportDir receives e2e.log (the run's output) and junit_01.xml.
	ReportDir string
	// Timeout bounds the whole run; 0 is Ginkgo's own default (1h).
	Timeout time.Duration
	// Out receives the run's output as it happens, besides e2e.log.
	Out io.Writer
}

// Run runs the suite once and reads its JUnit report. The error is about
// the run itself (it could not start, or wrote no report); failed specs
// are in the Summary.
func Run(ctx context.Context, o Options) (Summary, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}

	if err := absPaths(&o); err != nil {
		return Summary{}, err
	}

	for _, f := range []struct{ what, path string }{{"e2e.test", o.E2E}, {"kubeconfig", o.Kubeconfig}} {
		if _, err := os.Stat(f.path); err != nil {
			return Summary{}, fmt.Errorf("conformance: %s: %w", f.what, err)
		}
	}

	if err := os.MkdirAll(o.ReportDir, 0o755); err != nil {
		return Summary{}, err
	}

	junit := filepath.Join(o.ReportDir, "junit_01.xml")
	// A report from an earlier run must not pass for this one's.
	if err := os.Remove(junit); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Summary{}, err
	}

	log, err := os.Create(filepath.Join(o.ReportDir, "e2e.log"))
	if err != nil {
		return Summary{}, err
	}
	defer log.Close()

	cmd := exec.CommandContext(ctx, o.E2E, append(suiteArgs(o, true), e2eArgs(o)...)...)

	if o.Parallel > 1 {
		if o.Ginkgo == "" {
			return Summary{}, errors.New("conformance: a parallel run needs the ginkgo CLI")
		}

		args := append([]string{"--procs", fmt.Sprint(o.Parallel)}, suiteArgs(o, false)...)
		args = append(args, o.E2E, "--")
		cmd = exec.CommandContext(ctx, o.Ginkgo, append(args, e2eArgs(o)...)...)
	}

	w := io.MultiWriter(o.Out, log)
	cmd.Stdout, cmd.Stderr = w, w
	// e2e.test runs kubectl from PATH where --kubectl-path is not read.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+o.Kubeconfig, "PATH="+filepath.Dir(o.Kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))

	if o.Parallel > 1 {
		// The ginkgo CLI compares its version with the Ginkgo of the Go
		// module around the binary (`go list -m` in its directory): for a
		// binary in a talosbox checkout that is talosbox's, not the one
		// e2e.test links, and the warning would be false.
		cmd.Env = append(cmd.Env, "GO111MODULE=off")
	}

	fmt.Fprintf(w, "running %s\n", strings.Join(cmd.Args, " "))

	runErr := cmd.Run()

	f, err := os.Open(junit)
	if err != nil {
		if runErr != nil {
			return Summary{}, fmt.Errorf("conformance: %s: %w, and it wrote no report (see %s)", filepath.Base(cmd.Path), runErr, log.Name())
		}

		return Summary{}, fmt.Errorf("conformance: no report: %w", err)
	}
	defer f.Close()

	s, err := ParseJUnit(f)
	if err != nil {
		return Summary{}, err
	}

	// Ginkgo exits non-zero when a spec failed; that is the Summary's to
	// say. A failure with nothing failed in the report is the run's own.
	if runErr != nil && s.Failed == 0 && ctx.Err() == nil {
		return s, fmt.Errorf("conformance: %s: %w (see %s)", filepath.Base(cmd.Path), runErr, log.Name())
	}

	return s, ctx.Err()
}

// suiteArgs are Ginkgo's flags: with the ginkgo. prefix for e2e.test
// itself, without it for the ginkgo CLI.
func suiteArgs(o Options, prefixed bool) []string {
	p := ""
	if prefixed {
		p = "ginkgo."
	}

	// A conformance run selects a few hundred of some 7000 specs: one
	// "S" per skipped spec would bury the output.
	args := []string{"--" + p + "no-color", "--" + p + "silence-skips"}
	if o.Labels != "" {
		args = append(args, "--"+p+"label-filter="+o.Labels)
	}

	if o.Focus != "" {
		args = append(args, "--"+p+"focus="+o.Focus)
	}

	if o.Skip != "" {
		args = append(args, "--"+p+"skip="+o.Skip)
	}

	if o.Timeout > 0 {
		args = append(args, "--"+p+"timeout="+o.Timeout.String())
	}

	return args
}

// absPaths makes every path e2e.test is given absolute: ginkgo runs it in
// its own directory, where a relative --report-dir put the report out of
// reach (make conformance passes conformance-results) and a relative
// kubectl was not found.
func absPaths(o *Options) error {
	for _, p := range []*string{&o.E2E, &o.Kubeconfig, &o.Kubectl, &o.ReportDir} {
		if *p == "" {
			continue
		}

		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("conformance: %w", err)
		}

		*p = abs
	}

	return nil
}

// e2eArgs are the framework's own flags. The skeleton provider is the one
// for a cluster the suite knows nothing about (kind's and Talos's).
func e2eArgs(o Options) []string {
	return []string{
		"--kubeconfig=" + o.Kubeconfig,
		"--provider=skeleton",
		"--report-dir=" + o.ReportDir,
		"--kubectl-path=" + o.Kubectl,
	}
}
