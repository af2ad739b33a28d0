// Package timeline is cluster create's critical path, stamped: what the
// client did (configs, image, containers, each health check passed), what
// each node's services did (their own event history: etcd, containerd,
// the kubelet, ...) and what the API server recorded (nodes registered
// and Ready, each control-plane component and add-on started and Ready).
// All of it is sorted on one clock and printed as seconds since the
// create began, so the seconds between "containers started" and "CoreDNS
// Ready" can be read off step by step.
//
// The node's and the API server's times are their own clocks: Docker
// nodes share this host's, QEMU guests set theirs from the host at boot.
package timeline

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/check"
)

// Entry is one stamped step.
type Entry struct {
	At time.Time
	// Node is where it happened: "talosctl" for the client, a node's
	// address or Kubernetes name, or "cluster".
	Node string
	What string
}

// Timeline collects entries; the zero value is not usable, use New.
type Timeline struct {
	start time.Time

	mu      sync.Mutex
	entries []Entry
	names   map[string]string
}

// Client names the client's own entries.
const Client = "talosctl"

// New starts a timeline now.
func New() *Timeline { return &Timeline{start: time.Now()} }

// Start is when the timeline began.
func (t *Timeline) Start() time.Time { return t.start }

// Mark stamps a step of the client's now.
func (t *Timeline) Mark(what string) { t.Add(Entry{At: time.Now(), Node: Client, What: what}) }

// Name has entries of node (an address) shown as name: the node API knows
// a node by its address, Kubernetes by its name.
func (t *Timeline) Name(node, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()

	if t.names == nil {
		t.names = map[string]string{}
	}

	t.names[node] = name
}

// Add records entries stamped elsewhere.
func (t *Timeline) Add(entries ...Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()

	t.entries = append(t.entries, entries...)
}

// Entries are the entries in time order (ties keep the order added).
func (t *Timeline) Entries() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()

	out := slices.Clone(t.entries)
	for i, e := range out {
		if name, ok := t.names[e.Node]; ok {
			out[i].Node = name
		}
	}

	slices.SortStableFunc(out, func(a, b Entry) int { return a.At.Compare(b.At) })

	return out
}

// Since is an entry's offset from the start, or -1 when none matches.
// node "" matches any node; what matches a prefix.
func (t *Timeline) Since(node, what string) time.Duration {
	for _, e := range t.Entries() {
		if (node == "" || e.Node == node) && strings.HasPrefix(e.What, what) {
			return e.At.Sub(t.start)
		}
	}

	return -1
}

// Write prints the timeline: each step's offset from the start, the gap
// since the step before (where the time went), where and what.
func (t *Timeline) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "T+ (s)\tSTEP (s)\t  \tNODE\tWHAT\t")

	prev := t.start
	for _, e := range t.Entries() {
		gap := e.At.Sub(prev)
		if gap < 0 {
			gap = 0
		}

		fmt.Fprintf(tw, "%.1f\t+%.1f\t  \t%s\t%s\t\n", e.At.Sub(t.start).Seconds(), gap.Seconds(), e.Node, e.What)

		if e.At.After(prev) {
			prev = e.At
		}
	}

	return tw.Flush()
}

// ServiceSteps are the steps worth a line in a node's service history:
// the first time each service ran and turned healthy.
func ServiceSteps(node string, list *machine.ServiceList) []Entry {
	var out []Entry

	for _, svc := range list.GetServices() {
		var running, healthy bool

		for _, ev := range svc.GetEvents().GetEvents() {
			at := ev.GetTs().AsTime()

			switch {
			case !running && ev.GetState() == "Running":
				running = true
				out = append(out, Entry{At: at, Node: node, What: svc.GetId() + " running"})

				if strings.Contains(ev.GetMsg(), "Health check successful") {
					healthy = true
					out = append(out, Entry{At: at, Node: node, What: svc.GetId() + " healthy"})
				}
			case running && !healthy && strings.Contains(ev.GetMsg(), "Health check successful"):
				healthy = true
				out = append(out, Entry{At: at, Node: node, What: svc.GetId() + " healthy"})
			}
		}
	}

	return out
}

// Collect adds what the nodes and the API server recorded: each node's
// service steps and the Kubernetes milestones (when the cluster runs
// Kubernetes and the client may read it). What cannot be read is
// returned as one error after everything that could be is added.
func Collect(ctx context.Context, t *Timeline, c *check.Cluster) error {
	var errs []string

	results := check.FanOut(ctx, c, c.Nodes, func(ctx context.Context, cl *client.Client) (*machine.ServiceList, error) {
		return cl.Services(ctx)
	})

	for i, r := range results {
		if r.Err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", c.Nodes[i], r.Err))
			continue
		}

		t.Add(ServiceSteps(c.Nodes[i], r.Value)...)
	}

	if c.Kube != nil {
		ms, err := c.Kube.Milestones(ctx)
		if err != nil {
			errs = append(errs, fmt.Sprintf("kubernetes: %v", err))
		}

		for _, m := range ms {
			node := m.Node
			if node == "" {
				node = "cluster"
			}

			t.Add(Entry{At: m.At, Node: node, What: m.What})
		}
	}

	if len(errs) > 0 {
		return fmt.Errorf("timeline: %s", strings.Join(errs, "; "))
	}

	return nil
}
