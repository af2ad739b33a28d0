package network_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/talosbox/talosbox/configs"
)

// BenchmarkApplyLatency measures a config change (one new address, one
// new route) until both are in the kernel, seen through netlink
// notifications in the namespace. It reports p50 and p99.
//
//	go test -run '^$' -bench ApplyLatency -benchtime 200x ./internal/network/
func BenchmarkApplyLatency(b *testing.B) {
	ns := newNS(b)
	ns.veth("eth0", "peer0")

	nd := startNode(b, ns, nil)

	h, err := netns.GetFromPath(ns.path())
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close() //nolint:errcheck

	done := make(chan struct{})
	defer close(done)

	addrs := make(chan netlink.AddrUpdate, 256)
	routes := make(chan netlink.RouteUpdate, 256)

	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: &h}); err != nil {
		b.Fatal(err)
	}

	if err := netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{Namespace: &h}); err != nil {
		b.Fatal(err)
	}

	lat := make([]time.Duration, 0, b.N)

	b.ResetTimer()

	for i := range b.N {
		n := i % 250
		addr := fmt.Sprintf("10.%d.%d.2/24", 10+i/250%200, n)
		gw := fmt.Sprintf("10.%d.%d.1", 10+i/250%200, n)
		dst := fmt.Sprintf("172.%d.%d.0/24", 16+i/250%16, n)

		start := time.Now()
		nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{{
			Interface: "eth0", Addresses: []string{addr}, Routes: []configs.Route{{Network: dst, Gateway: gw}},
		}}})

		gotAddr, gotRoute := false, false
		deadline := time.After(10 * time.Second)

		for !gotAddr || !gotRoute {
			select {
			case u := <-addrs:
				if u.NewAddr && u.LinkAddress.String() == addr {
					gotAddr = true
				}
			case u := <-routes:
				if u.Type == 24 /* RTM_NEWROUTE */ && u.Dst != nil && u.Dst.String() == dst {
					gotRoute = true
				}
			case <-deadline:
				b.Fatalf("change %d not applied within 10s", i)
			}
		}

		lat = append(lat, time.Since(start))
	}

	b.StopTimer()

	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
