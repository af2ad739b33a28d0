//go:build e2e

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/resource"
	tbclient "github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/talosconfig"
	"github.com/talosbox/talosbox/internal/vip"
)

// vipAddr is the shared IP of a test cluster: .100 of its subnet.
func (dc *dockerCluster) vipAddr() string {
	a := dc.subnet.Addr()
	for range 100 {
		a = a.Next()
	}

	return a.String()
}

// vipPatch is the control planes' config patch for the shared IP.
func (dc *dockerCluster) vipPatch() string {
	dc.t.Helper()

	path := filepath.Join(dc.dir, "vip.yaml")
	patch := fmt.Sprintf("machine:\n  network:\n    interfaces:\n      - interface: eth0\n        vip:\n          ip: %s\n", dc.vipAddr())

	if err := os.WriteFile(path, []byte(patch), 0o600); err != nil {
		dc.t.Fatal(err)
	}

	return "@" + path
}

// vipSampler asks every control plane, every 100 ms, whether it holds the
// shared IP (its AddressStatuses, read through the node's own apid), and
// records every sample.
type vipSampler struct {
	dc      *dockerCluster
	clients map[string]*tbclient.Client

	mu      sync.Mutex
	samples []vipSample
}

type vipSample struct {
	at      time.Time
	holders []string
}

func newVIPSampler(t *testing.T, dc *dockerCluster, nodes []string) *vipSampler {
	t.Helper()

	cfg, err := talosconfig.Load(filepath.Join(dc.dir, "talosconfig"))
	if err != nil {
		t.Fatal(err)
	}

	ca, crt, err := cfg.Contexts[dc.name].Credentials()
	if err != nil {
		t.Fatal(err)
	}

	s := &vipSampler{dc: dc, clients: map[string]*tbclient.Client{}}

	for _, n := range nodes {
		c, err := tbclient.New(tbclient.Options{Endpoints: []string{n}, CA: ca, Crt: crt.Crt, Key: crt.Key, DialTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}

		t.Cleanup(func() { c.Close() })

		s.clients[n] = c
	}

	return s
}

// holds reports whether node has the shared IP on a link now. A node that
// does not answer does not hold it: its container, and so its network
// namespace, is gone.
func (s *vipSampler) holds(ctx context.Context, node string) bool {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()

	stream, err := s.clients[node].Resource.List(ctx, &resource.ListRequest{Type: "AddressStatuses"})
	if err != nil {
		return false
	}

	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) || err != nil {
			return false
		}

		var spec struct {
			Address string `yaml:"address"`
		}

		if msg.GetResource() != nil && yaml.Unmarshal(msg.GetResource().GetSpecYaml(), &spec) == nil && spec.Address == s.dc.vipAddr()+"/32" {
			return true
		}
	}
}

// run samples until ctx ends.
func (s *vipSampler) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()

	for {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			holders []string
		)

		at := time.Now()

		for node := range s.clients {
			wg.Go(func() {
				if s.holds(ctx, node) {
					mu.Lock()
					holders = append(holders, node)
					mu.Unlock()
				}
			})
		}

		wg.Wait()
		slices.Sort(holders)

		s.mu.Lock()
		s.samples = append(s.samples, vipSample{at: at, holders: holders})
		s.mu.Unlock()

		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// owner waits until exactly one node holds the IP and returns it with the
// time of the sample that showed it.
func (s *vipSampler) owner(t *testing.T, not string, timeout time.Duration) (string, time.Time) {
	t.Helper()

	deadline := time.Now().Add(timeout)

	for seen := 0; ; {
		s.mu.Lock()
		samples := s.samples[seen:]
		seen = len(s.samples)
		s.mu.Unlock()

		for _, sm := range samples {
			if len(sm.holders) == 1 && sm.holders[0] != not {
				return sm.holders[0], sm.at
			}
		}

		if time.Now().After(deadline) {
			t.Fatalf("no single owner of %s other than %q within %v", s.dc.vipAddr(), not, timeout)
		}

		time.Sleep(50 * time.Millisecond) // polling the sampler's record
	}
}

// neverTwo fails the test if any sample saw two holders at once.
func (s *vipSampler) neverTwo(t *testing.T) int {
	t.Helper()

	s.mu.Lock()
	defer s.mu.Unlock()

	for _, sm := range s.samples {
		if len(sm.holders) > 1 {
			t.Fatalf("at %s the shared IP was on %v", sm.at.Format(time.StampMilli), sm.holders)
		}
	}

	return len(s.samples)
}

// testVIPFailover kills the owner of the shared IP and measures how long
// until another control plane holds it, sampling all of them every 100 ms.
func testVIPFailover(t *testing.T, dc *dockerCluster, cps []string) {
	sampler := newVIPSampler(t, dc, cps)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() { defer close(done); sampler.run(ctx) }()

	defer func() { cancel(); <-done }()

	owner, _ := sampler.owner(t, "", time.Minute)

	// etcd extends every lease by an election timeout when its leader
	// changes, so the owner's death is timed on a node that is not also
	// the etcd leader: the measure is then the VIP's own lease.
	if leader := etcdLeaderIP(t, dc, cps); leader == owner {
		dc.ok("-n", owner, "etcd", "forfeit-leadership")
		eventually(t, 30*time.Second, func() error {
			if l := etcdLeaderIP(t, dc, cps); l == owner || l == "" {
				return fmt.Errorf("etcd leader is %q", l)
			}

			return nil
		})
	}

	victim := dc.containerOf(owner)
	killed := time.Now()

	if _, err := dc.docker.ContainerKill(context.Background(), victim, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		t.Fatal(err)
	}

	next, at := sampler.owner(t, owner, vip.DefaultTTL+time.Minute)
	took := at.Sub(killed)
	t.Logf("shared IP %s moved from %s to %s in %v after the kill (lease TTL %v)", dc.vipAddr(), owner, next, took.Round(time.Millisecond), vip.DefaultTTL)

	if took > vip.DefaultTTL+2*time.Second {
		t.Errorf("failover took %v, more than the TTL %v + 2s", took, vip.DefaultTTL)
	}

	if _, err := dc.docker.ContainerStart(context.Background(), victim, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}

	dc.ok("health", "--control-plane-nodes", strings.Join(cps, ","), "--wait-timeout", "2m")

	cancel()
	<-done

	n := sampler.neverTwo(t)
	t.Logf("%d samples, never two owners", n)
}

// etcdLeaderIP is the control plane that leads etcd, by `etcd status`.
func etcdLeaderIP(t *testing.T, dc *dockerCluster, cps []string) string {
	t.Helper()

	out, code := dc.talosctl("-n", strings.Join(cps, ","), "etcd", "status")
	if code != 0 {
		return ""
	}

	ids := map[string]string{} // member ID -> node
	leader := ""

	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[0] == "NODE" {
			continue
		}

		ids[f[1]] = f[0]
		leader = f[len(f)-6] // LEADER, counted from the end: sizes have spaces
	}

	return ids[leader]
}

// containerOf names the container of a node IP.
func (dc *dockerCluster) containerOf(ip string) string {
	for i, kind := range []string{"controlplane-1", "controlplane-2", "controlplane-3", "worker-1"} {
		if dc.ip(i) == ip {
			return dc.name + "-" + kind
		}
	}

	dc.t.Fatalf("no container for %s", ip)

	return ""
}

// partition drops all traffic between node and the other nodes on the
// bridge (the host still reaches every node), and returns the undo.
func partition(t *testing.T, node string, others []string) func() {
	t.Helper()

	var rules [][]string
	for _, o := range others {
		rules = append(rules, []string{"-s", node, "-d", o, "-j", "DROP"}, []string{"-s", o, "-d", node, "-j", "DROP"})
	}

	for _, r := range rules {
		if out, err := exec.Command("iptables", append([]string{"-I", "DOCKER-USER"}, r...)...).CombinedOutput(); err != nil {
			t.Fatalf("iptables: %v: %s", err, out)
		}
	}

	undo := func() {
		for _, r := range rules {
			exec.Command("iptables", append([]string{"-D", "DOCKER-USER"}, r...)...).Run() //nolint:errcheck // best effort; checked by health after
		}
	}
	t.Cleanup(undo)

	return undo
}
