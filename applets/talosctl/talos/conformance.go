package talos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/conformance"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/version"
)

func NewConformanceCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run conformance tests",
		Args:  cobra.NoArgs,
	}

	cmd.AddCommand(newConformanceKubernetesCommand(g))

	return cmd
}

type conformanceFlags struct {
	mode, e2e, ginkgo, kubectl, focus, skip, resultsDir string
	parallel                                            int
	timeout                                             time.Duration
}

func newConformanceKubernetesCommand(g *global.Args) *cobra.Command {
	var f conformanceFlags

	cmd := &cobra.Command{
		Use:     "kubernetes",
		Aliases: []string{"k8s"},
		Short:   "Run Kubernetes conformance tests",
		Long: `Runs the upstream Kubernetes conformance suite (the [Conformance] specs of
e2e.test, which make images builds from k8s.io/kubernetes) from this host
against the cluster of the node given with -n, with the node's admin kubeconfig.
Nothing is downloaded: the suite's images must be in the cluster's image cache.

  fast       every conformance spec: the parallel-safe ones with --parallel
             Ginkgo processes, then the [Serial] ones alone (as Talos's fast mode)
  certified  every conformance spec one at a time, as a CNCF submission needs,
             with e2e.log, junit_01.xml and PRODUCT.yaml in
             <results-dir>/v<major>.<minor>/talosbox

--focus narrows the specs further (a Ginkgo regular expression). The run ends
with "N passed, N failed, N skipped" and exits 1 when a spec failed.`,
		Example: `  talosctl -n 10.5.0.2 conformance kubernetes
  talosctl -n 10.5.0.2 conformance kubernetes --mode certified
  talosctl -n 10.5.0.2 conformance kubernetes --focus 'sig-api-machinery'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConformance(cmd, g, &f)
		},
	}

	fl := cmd.Flags()
	fl.StringVar(&f.mode, "mode", "fast", "conformance test mode: [fast, certified]")
	fl.StringVar(&f.e2e, "e2e-binary", "", "the e2e.test binary (default: e2e.test beside talosctl, then in PATH; make images builds it)")
	fl.StringVar(&f.ginkgo, "ginkgo-binary", "", "the ginkgo CLI for parallel runs (default: ginkgo beside talosctl, then in PATH)")
	fl.StringVar(&f.kubectl, "kubectl-binary", "", "the kubectl the kubectl specs run (default: kubectl beside talosctl, then in PATH)")
	fl.StringVar(&f.focus, "focus", "", "run only the conformance specs matching this regular expression too")
	fl.StringVar(&f.skip, "skip", "", "skip the specs matching this regular expression")
	fl.IntVar(&f.parallel, "parallel", 4, "fast mode: Ginkgo processes for the parallel-safe specs")
	fl.StringVar(&f.resultsDir, "results-dir", "conformance-results", "where the results are written")
	fl.DurationVar(&f.timeout, "timeout", 0, "bound the run (default: Ginkgo's hour per pass in fast mode, 24h certified)")

	return cmd
}

func runConformance(cmd *cobra.Command, g *global.Args, f *conformanceFlags) error {
	if f.mode != "fast" && f.mode != "certified" {
		return fmt.Errorf("unsupported conformance mode %q: use fast or certified", f.mode)
	}

	o := conformance.Options{Focus: f.focus, Skip: f.skip, Parallel: f.parallel, Timeout: f.timeout, Out: cmd.OutOrStdout()}

	var err error

	if o.E2E, err = findTool(f.e2e, "e2e.test"); err != nil {
		return err
	}

	if o.Kubectl, err = findTool(f.kubectl, "kubectl"); err != nil {
		return err
	}

	if f.mode == "fast" && f.parallel > 1 {
		if o.Ginkgo, err = findTool(f.ginkgo, "ginkgo"); err != nil {
			return err
		}
	}

	return g.WithSession(false, func(s *global.Session) error {
		if err := global.SingleNode(s); err != nil {
			return err
		}

		results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) ([]byte, error) {
			return c.Kubeconfig(ctx)
		})

		if err := global.ReportErrors(cmd, results); err != nil {
			return err
		}

		kc, err := os.CreateTemp("", "talosctl-conformance-kubeconfig-*")
		if err != nil {
			return err
		}

		defer os.Remove(kc.Name())

		if _, err := kc.Write(results[0].Value); err != nil {
			kc.Close()
			return err
		}

		if err := kc.Close(); err != nil {
			return err
		}

		o.Kubeconfig = kc.Name()

		start := time.Now()

		var sum conformance.Summary

		if f.mode == "certified" {
			o.ReportDir = conformance.CertifiedDir(f.resultsDir, images.Kubernetes)
			sum, err = conformance.Certified(cmd.Context(), o, conformance.Talosbox(version.Tag))
		} else {
			o.ReportDir = f.resultsDir
			sum, err = conformance.Fast(cmd.Context(), o)
		}

		out := cmd.OutOrStdout()

		for _, name := range sum.Failures {
			fmt.Fprintf(out, "FAILED: %s\n", name)
		}

		fmt.Fprintf(out, "conformance (%s mode) in %s, results in %s: %s\n", f.mode, time.Since(start).Round(time.Second), o.ReportDir, sum)

		if err != nil {
			return err
		}

		if sum.Failed > 0 {
			return &global.ExitError{Code: 1}
		}

		return nil
	})
}

// findTool is the flag's path, else name beside the talosctl that runs
// (make images puts e2e.test, ginkgo and kubectl in _out/bin with the
// applet links), else name in PATH; always absolute, because ginkgo runs
// e2e.test in another directory and e2e.test runs kubectl from there.
func findTool(flag, name string) (string, error) {
	p, err := lookTool(flag, name)
	if err != nil {
		return "", err
	}

	return filepath.Abs(p)
}

func lookTool(flag, name string) (string, error) {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return "", fmt.Errorf("--%s-binary: %w", strings.TrimSuffix(name, ".test"), err)
		}

		return flag, nil
	}

	var dirs []string

	if filepath.Base(os.Args[0]) != os.Args[0] {
		dirs = append(dirs, filepath.Dir(os.Args[0]))
	}

	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(exe), "bin"), filepath.Dir(exe))
	}

	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}

	p, err := exec.LookPath(name)
	if errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("no %s beside talosctl or in PATH: make images builds it (or pass its path)", name)
	}

	return p, err
}
