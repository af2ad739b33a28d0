//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// What cluster create's timeline says, read back from its output: the
// critical path from `cluster create` to Kubernetes Ready, step by step.

// tlStep is one line of the printed timeline.
type tlStep struct {
	at   float64 // seconds since the create began
	node string
	what string
}

// parseTimeline reads the timeline cluster create printed after "timeline:".
func parseTimeline(t testing.TB, out string) []tlStep {
	t.Helper()

	_, body, ok := strings.Cut(out, "\ntimeline:\n")
	if !ok {
		t.Fatalf("cluster create printed no timeline:\n%s", out)
	}

	var steps []tlStep

	for _, line := range strings.Split(body, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}

		at, err := strconv.ParseFloat(f[0], 64)
		if err != nil || !strings.HasPrefix(f[1], "+") {
			break // the timeline's end
		}

		steps = append(steps, tlStep{at: at, node: f[2], what: strings.Join(f[3:], " ")})
	}

	if len(steps) == 0 {
		t.Fatalf("an empty timeline:\n%s", body)
	}

	return steps
}

// first is the first step of node ("" for any) whose text starts with
// what, or -1.
func first(steps []tlStep, node, what string) float64 {
	for _, s := range steps {
		if (node == "" || s.node == node) && strings.HasPrefix(s.what, what) {
			return s.at
		}
	}

	return -1
}

// last is the last such step, or -1.
func last(steps []tlStep, node, what string) float64 {
	at := -1.0

	for _, s := range steps {
		if (node == "" || s.node == node) && strings.HasPrefix(s.what, what) {
			at = s.at
		}
	}

	return at
}

// checkTimeline asserts the causal order a healthy bring-up must show on
// every control plane and worker: a timeline that lost a source, or one
// whose clocks disagree, fails here. Pods are stamped by their current
// containers, so an edge's later step is one that a restart can only move
// later.
func checkTimeline(t *testing.T, steps []tlStep, cps, workers []string) {
	t.Helper()

	type edge struct{ node, before, after string }

	var edges []edge

	for _, n := range append(append([]string{}, cps...), workers...) {
		edges = append(edges,
			edge{"", "stage containers done", ""},
			edge{n, "container started", n + "|kubelet running"},
			edge{n, "kubelet running", n + "|node registered"},
			edge{n, "node registered", n + "|node Ready"},
			// A DaemonSet's pod is scheduled onto a registered node.
			edge{n, "node registered", n + "|kube-proxy started"},
		)
	}

	// A control plane's kubelet registers through KubePrism, which may
	// reach another control plane's API server before its own is up.
	for _, n := range cps {
		edges = append(edges,
			edge{n, "etcd healthy", n + "|kube-apiserver started"},
			edge{n, "kube-apiserver started", n + "|kube-apiserver Ready"},
		)
	}

	edges = append(edges,
		edge{"cluster", "deployment/coredns created", "|coredns Ready"},
		edge{"", "coredns Ready", "talosctl|waiting for coredns to report ready: OK"},
		edge{"", "node Ready", "talosctl|waiting for all k8s nodes to report ready: OK"},
	)

	for _, e := range edges {
		a := first(steps, e.node, e.before)
		if a < 0 {
			t.Errorf("the timeline has no %q on %q", e.before, e.node)
			continue
		}

		if e.after == "" {
			continue
		}

		node, what, _ := strings.Cut(e.after, "|")

		// The API server's times have one-second resolution: allow it.
		if b := last(steps, node, what); b < 0 {
			t.Errorf("the timeline has no %q on %q", what, node)
		} else if b < a-1 {
			t.Errorf("%s: %q at %.1fs comes before %q at %.1fs", e.node, what, b, e.before, a)
		}
	}
}

// BenchmarkDockerClusterCreate creates Docker clusters of 1+1 and 3+1
// nodes with cached images (after make images) and reports, from the
// timeline cluster create prints, the seconds to its milestones: the
// first API server Ready, every node Ready, CoreDNS Ready and the create
// returning healthy. scripts/bench-k8s.sh runs it; benchstat compares
// runs. TALOSBOX_BENCH_SHAPES ("1+1 3+1") picks the shapes.
func BenchmarkDockerClusterCreate(b *testing.B) {
	bin := buildBinary(b)

	imagesDir, _ := filepath.Abs(filepath.Join("_out", "images"))
	if _, err := os.Stat(filepath.Join(imagesDir, "runtime", "runc")); err != nil {
		b.Fatalf("no runtime build: %v (run make images)", err)
	}

	api, err := client.New(client.FromEnv)
	if err != nil {
		b.Fatal(err)
	}

	b.Cleanup(func() { api.Close() })

	shapes := strings.Fields(os.Getenv("TALOSBOX_BENCH_SHAPES"))
	if len(shapes) == 0 {
		shapes = []string{"1+1", "3+1"}
	}

	for _, shape := range shapes {
		var cps, workers int
		if _, err := fmt.Sscanf(shape, "%d+%d", &cps, &workers); err != nil {
			b.Fatalf("shape %q: want CPS+WORKERS", shape)
		}

		b.Run(shape, func(b *testing.B) {
			sums := map[string]float64{}

			for range b.N {
				dc := newDockerCluster(b, bin)

				start := time.Now()
				out := dc.ok("cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(), "--images-dir", imagesDir,
					"--controlplanes", strconv.Itoa(cps), "--workers", strconv.Itoa(workers), "--wait-timeout", "15m")
				total := time.Since(start).Seconds()

				steps := parseTimeline(b, out)
				sums["s-healthy"] += total
				sums["s-containers"] += first(steps, "talosctl", "stage containers done")
				sums["s-etcd"] += first(steps, "", "etcd healthy")
				sums["s-apiserver"] += first(steps, "", "kube-apiserver Ready")
				sums["s-nodes-ready"] += last(steps, "", "node Ready")
				sums["s-coredns"] += last(steps, "", "coredns Ready")

				dc.ok("cluster", "destroy", "--name", dc.name)
			}

			keys := make([]string, 0, len(sums))
			for k := range sums {
				keys = append(keys, k)
			}

			sort.Strings(keys)

			for _, k := range keys {
				b.ReportMetric(sums[k]/float64(b.N), k)
			}
		})
	}
}
