package provision

import (
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

// twoNodes is a request for a control plane and a worker running tiny, each answering on a
// random published port.
func twoNodes(name, image string, cidr netip.Prefix) ClusterRequest {
	node := func(n, typ string, i int) NodeRequest {
		return NodeRequest{
			Name:     name + "-" + n,
			Type:     typ,
			IP:       hostAddr(cidr, i),
			Env:      []string{"TINY_ENV=" + n, "TINY_CAT=" + StateDir + "/config/machine.yaml"},
			NanoCPUs: 500_000_000,
			Memory:   64 << 20,
			Ports:    []PortMapping{{ContainerPort: 8080}},
			Files:    []File{{Path: StateDir + "/config/machine.yaml", Content: []byte("config of " + n)}},
		}
	}
	return ClusterRequest{
		Name:    name,
		Image:   image,
		Network: NetworkRequest{CIDR: cidr, MTU: 1400},
		Labels:  map[string]string{testLabel: "1"},
		// The worker first: Show must still list the control plane first.
		Nodes: []NodeRequest{node("worker-1", TypeWorker, 3), node("controlplane-1", TypeControlPlane, 2)},
	}
}

// events records progress events; the callback contract says calls are serialized, and the race
// detector checks that the mutex is not what makes it safe.
type events struct {
	mu   sync.Mutex
	list []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
}

func (e *events) stages() []Stage {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Stage
	for _, ev := range e.list {
		out = append(out, ev.Stage)
	}
	return out
}

func (e *events) count(s Stage) int {
	n := 0
	for _, st := range e.stages() {
		if st == s {
			n++
		}
	}
	return n
}

func TestClusterLifecycle(t *testing.T) {
	d := newDocker(t)
	image := tinyImage(t, d)
	name := clusterName()
	cidr := freeSubnet(t, d)
	destroyOnCleanup(t, d, name)
	ctx := testCtx(t, 3*time.Minute)

	var ev events
	start := time.Now()
	cl, err := d.Create(ctx, twoNodes(name, image, cidr), func(e Event) { t.Log(e); ev.add(e) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created 2 nodes in %s", time.Since(start))
	want := []Stage{StageNetworkCreated, StageVolumeCreated, StageVolumeCreated,
		StageContainerCreated, StageContainerStarted, StageContainerCreated, StageContainerStarted}
	if got := ev.stages(); !slices.Equal(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}

	// What Create returns is what Show sees.
	shown, err := d.Show(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Cluster{cl, shown} {
		if c.Network.Name != name || c.Network.CIDR != cidr || c.Network.Gateway != hostAddr(cidr, 1) || c.Network.MTU != 1400 {
			t.Errorf("network %+v", c.Network)
		}
		if len(c.Nodes) != 2 {
			t.Fatalf("%d nodes: %+v", len(c.Nodes), c.Nodes)
		}
		cp, w := c.Nodes[0], c.Nodes[1]
		if cp.Name != name+"-controlplane-1" || cp.Type != TypeControlPlane || cp.IP != hostAddr(cidr, 2) {
			t.Errorf("first node %+v, want the control plane at %s", cp, hostAddr(cidr, 2))
		}
		if w.Name != name+"-worker-1" || w.Type != TypeWorker || w.IP != hostAddr(cidr, 3) {
			t.Errorf("second node %+v, want the worker at %s", w, hostAddr(cidr, 3))
		}
		for _, n := range c.Nodes {
			if n.State != "running" || n.NanoCPUs != 500_000_000 || n.Memory != 64<<20 || n.Image != image || n.ContainerID == "" {
				t.Errorf("node %+v", n)
			}
			if len(n.Ports) != 1 || n.Ports[0].HostPort == 0 || n.Ports[0].HostIP != netip.MustParseAddr("127.0.0.1") ||
				n.Ports[0].ContainerPort != 8080 || n.Ports[0].Proto != "tcp" {
				t.Errorf("node %s ports %v, want one random 127.0.0.1 port for 8080/tcp", n.Name, n.Ports)
			}
		}
	}

	// The published ports reach the nodes, which see their hostname, env and files.
	for _, n := range shown.Nodes {
		addr := netip.AddrPortFrom(n.Ports[0].HostIP, n.Ports[0].HostPort).String()
		r := dialReport(t, addr)
		short := n.Name[len(name)+1:]
		if r.Hostname != n.Name || r.Env != short || r.Cat != "config of "+short || !r.StateWritable {
			t.Errorf("node %s via %s reports %+v", n.Name, addr, r)
		}
	}

	if names, err := d.List(ctx); err != nil || !slices.Contains(names, name) {
		t.Errorf("List = %v, %v; want it to contain %s", names, err, name)
	}

	cp, worker := shown.Nodes[0], shown.Nodes[1]
	st, err := d.NodeStats(ctx, name, cp.Name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Memory == 0 || st.MemoryLimit != 64<<20 {
		t.Errorf("stats %+v, want some memory used under a 64MiB limit", st)
	}
	t.Logf("control plane uses %d KiB", st.Memory>>10)

	// Stop and start the worker: it keeps its IP and answers again.
	stopStart := time.Now()
	if err := d.StopNode(ctx, name, worker.Name, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("worker stopped in %s", time.Since(stopStart))
	stopped, err := d.Show(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if w := stopped.Nodes[1]; w.State != "exited" || w.IP != worker.IP {
		t.Errorf("stopped worker %+v, want exited at %s", w, worker.IP)
	}
	if _, err := d.NodeStats(ctx, name, worker.Name); err == nil {
		t.Error("stats of a stopped node succeeded")
	}
	if err := d.StartNode(ctx, name, worker.Name); err != nil {
		t.Fatal(err)
	}
	restarted, err := d.Show(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	w := restarted.Nodes[1]
	if w.State != "running" || w.IP != worker.IP || len(w.Ports) != 1 {
		t.Fatalf("restarted worker %+v", w)
	}
	dialReport(t, netip.AddrPortFrom(w.Ports[0].HostIP, w.Ports[0].HostPort).String())

	if err := d.StopNode(ctx, name, "no-such-node", time.Second); !errors.Is(err, ErrNotFound) {
		t.Errorf("StopNode(no-such-node) = %v, want ErrNotFound", err)
	}

	// Destroy: everything with the label goes, quickly.
	var dev events
	start = time.Now()
	if err := d.Destroy(ctx, name, dev.add); err != nil {
		t.Fatal(err)
	}
	t.Logf("destroyed 2 nodes in %s", time.Since(start))
	assertGone(t, d, name)
	if dev.count(StageContainerRemoved) != 2 || dev.count(StageNetworkRemoved) != 1 || dev.count(StageVolumeRemoved) != 2 {
		t.Errorf("destroy events %v", dev.stages())
	}
	if err := d.Destroy(ctx, name, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Destroy = %v, want ErrNotFound", err)
	}
	if _, err := d.Show(ctx, name); !errors.Is(err, ErrNotFound) {
		t.Errorf("Show after Destroy = %v, want ErrNotFound", err)
	}
}
