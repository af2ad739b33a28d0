package discovery_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/etcd/etcdtest"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

func TestEtcdRegistry(t *testing.T) {
	member := etcdtest.Start(t)
	cli := member.Server.Client()
	reg := discovery.EtcdRegistry{Client: cli, TTL: 2 * time.Second}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	a := cluster.AffiliateSpec{NodeID: "n1", Hostname: "cp-1", Nodename: "cp-1", MachineType: "controlplane",
		OperatingSystem: discovery.OperatingSystem(), Addresses: []netip.Addr{netip.MustParseAddr("10.5.0.2")},
		ControlPlane: &cluster.ControlPlane{APIServerPort: 7443}}
	if err := reg.Publish(ctx, a); err != nil {
		t.Fatal(err)
	}

	// A record that does not decode is skipped, not fatal to the list.
	if _, err := cli.Put(ctx, discovery.KeyPrefix+"garbage", "{not json"); err != nil {
		t.Fatal(err)
	}

	got, err := reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if len(got) != 1 || !got[0].Equal(a) || got[0].Member().Hostname != "cp-1" || got[0].Member().ControlPlane.APIServerPort != 7443 {
		t.Fatalf("listed %+v, want %+v", got, a)
	}

	// An invalid record is refused before it is stored.
	bad := a
	bad.MachineType = "root"

	if err := reg.Publish(ctx, bad); err == nil || !strings.Contains(err.Error(), "machine type") {
		t.Fatalf("invalid record: %v", err)
	}

	// Not republished, the record expires with its lease.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()

	for {
		got, err := reg.List(ctx)
		if err != nil {
			t.Fatal(err)
		}

		if len(got) == 0 {
			break
		}

		select {
		case <-ctx.Done():
			t.Fatalf("the record outlived its lease: %+v", got)
		case <-tick.C:
		}
	}
}

func TestAffiliateValidate(t *testing.T) {
	ok := cluster.AffiliateSpec{NodeID: "abcDEF123_-", Hostname: "node-1.example.com", MachineType: "worker"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		change func(*cluster.AffiliateSpec)
		want   string
	}{
		{"empty id", func(a *cluster.AffiliateSpec) { a.NodeID = "" }, "node ID"},
		{"id with slash", func(a *cluster.AffiliateSpec) { a.NodeID = "a/b" }, "node ID"},
		{"uppercase hostname", func(a *cluster.AffiliateSpec) { a.Hostname = "Node" }, "hostname"},
		{"bad nodename", func(a *cluster.AffiliateSpec) { a.Nodename = "-x" }, "node name"},
		{"unknown type", func(a *cluster.AffiliateSpec) { a.MachineType = "" }, "machine type"},
		{"long os", func(a *cluster.AffiliateSpec) { a.OperatingSystem = strings.Repeat("x", 300) }, "too long"},
		{"zero address", func(a *cluster.AffiliateSpec) { a.Addresses = []netip.Addr{{}} }, "invalid address"},
		{"no API server port", func(a *cluster.AffiliateSpec) { a.ControlPlane = &cluster.ControlPlane{} }, "API server port 0"},
		{"API server port too big", func(a *cluster.AffiliateSpec) { a.ControlPlane = &cluster.ControlPlane{APIServerPort: 70000} },
			"API server port 70000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ok
			tc.change(&a)

			if err := a.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
