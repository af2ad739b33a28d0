package trustd

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/etcd/etcdtest"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// TestAffiliatesThroughTrustd: a worker publishes through trustd into the
// control plane's etcd registry and reads the whole cluster back.
func TestAffiliatesThroughTrustd(t *testing.T) {
	member := etcdtest.Start(t)
	reg := discovery.EtcdRegistry{Client: member.Server.Client()}
	ts := startServerWith(t, nil, reg)
	ctx := testContext(t)

	cp := cluster.AffiliateSpec{NodeID: "cpnode1", Hostname: "cp-1", Nodename: "cp-1", MachineType: "controlplane",
		OperatingSystem: discovery.OperatingSystem(), Addresses: []netip.Addr{netip.MustParseAddr("10.5.0.2")},
		ControlPlane: &cluster.ControlPlane{APIServerPort: 6443}}
	if err := reg.Publish(ctx, cp); err != nil {
		t.Fatal(err)
	}

	ca, _, _ := cas(t)
	worker := cluster.AffiliateSpec{NodeID: "worker1", Hostname: "w-1", MachineType: "worker", Addresses: []netip.Addr{netip.MustParseAddr("10.5.0.5")}}

	// The first endpoint is down: the registry goes on to the next.
	wr := &Registry{Endpoints: []string{closedAddr(t), ts.addr}, Token: testToken, Trust: trustPool(t, ca)}
	if err := wr.Publish(ctx, worker); err != nil {
		t.Fatal(err)
	}

	got, _ := wr.List(ctx)
	ids := []string{}

	for _, a := range got {
		ids = append(ids, a.NodeID+"/"+a.MachineType)
	}

	slices.Sort(ids)

	if want := []string{"cpnode1/controlplane", "worker1/worker"}; !slices.Equal(ids, want) {
		t.Fatalf("the worker sees %v, want %v", ids, want)
	}

	// The records cross trustd whole: the control plane's API server port
	// (KubePrism's upstreams on workers), and none for the worker.
	for _, a := range got {
		if want := map[string]cluster.AffiliateSpec{cp.NodeID: cp, worker.NodeID: worker}[a.NodeID]; !a.Equal(want) {
			t.Errorf("the worker sees %+v, want %+v", a, want)
		}
	}

	// The control plane sees the worker's record in etcd.
	all, err := reg.List(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("etcd registry holds %v (%v)", all, err)
	}

	// A wrong token gets nothing, and stores nothing.
	bad := &Registry{Endpoints: []string{ts.addr}, Token: "wrong.token", Trust: trustPool(t, ca)}
	intruder := worker
	intruder.NodeID = "intruder"

	if err := bad.Publish(ctx, intruder); err == nil || !strings.Contains(err.Error(), "wrong token") {
		t.Fatalf("wrong token: %v", err)
	}

	if all, _ := reg.List(ctx); len(all) != 2 {
		t.Fatalf("a refused caller left a record: %v", all)
	}
}

func TestAffiliatesBadRecords(t *testing.T) {
	member := etcdtest.Start(t)
	ts := startServerWith(t, nil, discovery.EtcdRegistry{Client: member.Server.Client()})
	client := rawClient(t, ts.addr)
	ctx := metadata.AppendToOutgoingContext(testContext(t), tokenKey, testToken)

	for _, tc := range []struct {
		name string
		self *security.Affiliate
	}{
		{"no record", nil},
		{"bad node id", &security.Affiliate{NodeId: "../etc", Hostname: "w-1", MachineType: "worker"}},
		{"bad hostname", &security.Affiliate{NodeId: "w1", Hostname: "W 1!", MachineType: "worker"}},
		{"bad machine type", &security.Affiliate{NodeId: "w1", Hostname: "w-1", MachineType: "admin"}},
		{"bad address", &security.Affiliate{NodeId: "w1", Hostname: "w-1", MachineType: "worker", Addresses: []string{"10.5.0.300"}}},
		{"too many addresses", &security.Affiliate{NodeId: "w1", Hostname: "w-1", MachineType: "worker", Addresses: slices.Repeat([]string{"10.5.0.5"}, 33)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Affiliates(ctx, &security.AffiliatesRequest{Self: tc.self})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
		})
	}

	// Without a registry (a node whose trustd serves no discovery).
	plain := startServer(t, nil)
	if _, err := rawClient(t, plain.addr).Affiliates(ctx, &security.AffiliatesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("no registry: %v", err)
	}
}
