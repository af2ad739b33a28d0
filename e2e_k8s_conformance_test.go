//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/cluster/conformance"
)

// conformanceSubset is a fast cross-section of the upstream [Conformance]
// specs (every SIG, and every conformance image make images builds from
// source, pulled through the nodes' image cache): discovery, API objects'
// lifecycles, environment and volumes, probes and hooks, sysctls, DNS
// with getent and dig, Services, NodePort and hostPort, workloads'
// rollouts, webhooks, the aggregated sample API server with its etcd,
// and kubectl. Specs marked [Serial] run in the serial pass. The whole
// suite is make conformance's.
var conformanceSubset = []string{
	// sig-api-machinery
	"should validate PreferredVersion for each APIGroup",
	"Namespaces [Serial] should patch a Namespace",
	"Sample API Server using the current Aggregator",
	"should be able to deny pod and configmap creation",
	"should be able to convert from CR v1 to CR v2",
	"should delete pods created by rc when not orphaning",
	// sig-node
	"should run through a ConfigMap lifecycle",
	"lease API should be available",
	"ConfigMap should be consumable via the environment",
	"Secrets should be consumable via the environment",
	"should support sysctls",
	"should allow composing env vars into new env vars",
	`should be restarted with a exec "cat /tmp/health" liveness probe`,
	"should execute poststart http hook properly",
	"should not allow privilege escalation when false",
	"should print the output to logs",
	"should provide pod name, namespace and IP address as env vars",
	"should invoke init containers on a RestartAlways pod",
	"will start an ephemeral container in an existing pod",
	"should report termination message from log output if TerminationMessagePolicy FallbackToLogsOnError is set",
	"Pods should be updated",
	"should call prestop when killing a pod",
	// sig-network
	"should provide /etc/hosts entries for the cluster",
	"DNS should provide DNS for services",
	"should serve a basic endpoint from pods",
	"should be able to create a functioning NodePort service",
	"should create Endpoints and EndpointSlices for Pods matching a Service",
	"no conflict between pods with same hostPort but different hostIP and protocol",
	// sig-apps
	"RollingUpdateDeployment should delete old pods and create new ones",
	"deployment should support rollover",
	"Deployment Deployment should have a working scale subresource",
	"ReplicaSet should serve a basic image on each replica with a public image",
	"should run a job to completion when tasks sometimes fail and are locally restarted",
	"Daemon set [Serial] should run and stop simple daemon",
	// sig-storage
	"should support (non-root,0644,tmpfs)",
	"Projected secret should be consumable from pods in volume [NodeConformance]",
	"ConfigMap updates should be reflected in volume",
	// Not the "... with mountPath of existing file" spec too.
	"should support subpaths with configmap pod [Conformance]",
	// sig-cli
	"Update Demo should create and stop a replication controller",
	"should create a pod from an image when restart is Never",
}

// conformanceFocus is the subset as one ginkgo focus expression.
func conformanceFocus() string {
	quoted := make([]string, len(conformanceSubset))
	for i, s := range conformanceSubset {
		quoted[i] = regexp.QuoteMeta(s)
	}

	return strings.Join(quoted, "|")
}

// serialSpecs counts the subset's specs the serial pass runs.
func serialSpecs() int {
	n := 0

	for _, s := range conformanceSubset {
		if strings.Contains(s, "[Serial]") {
			n++
		}
	}

	return n
}

// TestConformanceSubsetNamesOneSpecEach asks the e2e.test make images
// built for its specs' full names (what --focus matches): each entry of
// conformanceSubset must select exactly one [Conformance] spec, and say
// [Serial] exactly when that spec is serial, or the subset's counts lie.
// It needs no cluster, so a pattern that grew a second match fails here
// in a second instead of after a 20-minute cluster test.
func TestConformanceSubsetNamesOneSpecEach(t *testing.T) {
	e2e, err := filepath.Abs(filepath.Join("_out", "bin", "e2e.test"))
	if err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(e2e, "-list-tests").Output()
	if err != nil {
		t.Fatalf("%s -list-tests (make images builds it): %v", e2e, err)
	}

	var specs []string

	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)

	for sc.Scan() {
		// "test/e2e/common/node/sysctl.go:77: [sig-node] Sysctls ..."
		if _, name, ok := strings.Cut(sc.Text(), ": "); ok && strings.Contains(name, "[Conformance]") {
			specs = append(specs, name)
		}
	}

	if len(specs) < 300 {
		t.Fatalf("%d [Conformance] specs listed; want the whole suite:\n%s", len(specs), out)
	}

	for _, s := range conformanceSubset {
		re := regexp.MustCompile(regexp.QuoteMeta(s))

		var matched []string

		for _, name := range specs {
			if re.MatchString(name) {
				matched = append(matched, name)
			}
		}

		if len(matched) != 1 {
			t.Errorf("%q selects %d [Conformance] specs, want 1: %q", s, len(matched), matched)
			continue
		}

		if serial := strings.Contains(matched[0], "[Serial]"); serial != strings.Contains(s, "[Serial]") {
			t.Errorf("%q selects %q: the entry must say [Serial] exactly when the spec is serial", s, matched[0])
		}
	}
}

// testConformanceSubset runs `talosctl conformance kubernetes` in fast
// mode, narrowed to conformanceSubset, with the e2e.test make images built
// from k8s.io/kubernetes: both passes run, the results are where a
// submission wants them, and the closing line counts every spec.
func testConformanceSubset(t *testing.T, dc *dockerCluster, node string, nodes []string) {
	t.Run("conformance subset with the upstream e2e.test", func(t *testing.T) {
		results := filepath.Join(dc.dir, "conformance")

		// The upgrades before this replaced the node agents: the suite
		// starts once every one of them runs its current spec, so a spec
		// never meets a node whose kube-proxy is still starting.
		for _, w := range []string{"daemonset/kube-proxy", "daemonset/kube-flannel", "deployment/coredns"} {
			dc.kube(t, "-n", "kube-system", "rollout", "status", w, "--timeout=5m")
		}

		// The talosctl under test is built apart from _out/bin, where make
		// images put the suite.
		bin, err := filepath.Abs(filepath.Join("_out", "bin"))
		if err != nil {
			t.Fatal(err)
		}

		out := dc.okIn(t, "-n", node, "conformance", "kubernetes", "--mode", "fast", "--parallel", "4",
			"--e2e-binary", filepath.Join(bin, "e2e.test"), "--ginkgo-binary", filepath.Join(bin, "ginkgo"),
			"--kubectl-binary", filepath.Join(bin, "kubectl"),
			"--focus", conformanceFocus(), "--results-dir", results)

		m := regexp.MustCompile(`results in \S+: (\d+) passed, (\d+) failed, (\d+) skipped`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no closing line:\n%s", out)
		}

		if passed, _ := strconv.Atoi(m[1]); passed != len(conformanceSubset) || m[2] != "0" || m[3] != "0" {
			t.Errorf("%s passed, %s failed, %s skipped; want %d passed:\n%s", m[1], m[2], m[3], len(conformanceSubset), out)
			// Last, as CI shows a failure's closing lines.
			t.Logf("the cluster's network after the failure:\n%s", dc.networkDiagnosis(nodes))
		}

		// The serial spec ran in the serial pass, the others beside each other.
		for pass, want := range map[string]int{"parallel": len(conformanceSubset) - serialSpecs(), "serial": serialSpecs()} {
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

// networkDiagnosis is what a failed Service or DNS spec needs to be
// understood from CI's closing lines alone: the node agents' restarts and
// their last errors, where the e2e pods ran, and each node's memory and
// OOM kills.
func (dc *dockerCluster) networkDiagnosis(nodes []string) string {
	var b strings.Builder

	run := func(args ...string) string {
		out, _ := dc.kubectl(append([]string{"--request-timeout", "20s"}, args...)...)

		return out
	}

	pods := run("get", "pods", "-A", "-o", "wide", "--no-headers")
	for line := range strings.Lines(pods) {
		if f := strings.Fields(line); len(f) > 4 && (f[0] == "kube-system" || f[3] != "Running" || f[4] != "0") {
			b.WriteString("pod: " + strings.Join(f, " ") + "\n")
		}
	}

	for line := range strings.Lines(pods) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "kube-system" || !(strings.HasPrefix(f[1], "kube-proxy") || strings.HasPrefix(f[1], "kube-flannel") || strings.HasPrefix(f[1], "coredns")) {
			continue
		}

		for _, prev := range []bool{false, true} {
			args := []string{"-n", "kube-system", "logs", f[1], "--all-containers", "--tail", "200"}
			if prev {
				args = append(args, "--previous")
			}

			if errs := grepLines(run(args...), "E1", "E2", "W1", "W2", "error", "Error"); errs != "" {
				if len(errs) > 600 {
					errs = errs[len(errs)-600:]
				}

				b.WriteString(fmt.Sprintf("%s (previous %v): %s\n", f[1], prev, errs))
			}
		}
	}

	for _, ip := range nodes {
		mem, _ := dc.talosctl("-n", ip, "memory")
		dmesg, _ := dc.talosctl("-n", ip, "dmesg")
		b.WriteString(fmt.Sprintf("node %s: %s; oom: %s\n", ip, strings.Join(strings.Fields(mem), " "), grepLines(dmesg, "oom-kill", "Out of memory")))
	}

	return b.String()
}
