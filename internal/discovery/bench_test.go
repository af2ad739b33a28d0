package discovery_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/etcd/etcdtest"
)

// pollOnly hides a registry's Watch: discovery as it was before the watch.
type pollOnly struct{ discovery.Registry }

// BenchmarkPublishToMembers times one node's change reaching another
// node's Members: B gets a new address, publishes it at once (an input
// changed), and the clock stops when A's Members show it. ns/op is the
// mean; max-ms the worst. Polling waits for A's next tick, half an
// interval on average; the watch waits for etcd. The poll cases are slow
// (an interval per change): run them with -benchtime=10x.
func BenchmarkPublishToMembers(b *testing.B) {
	member := etcdtest.Start(b)
	reg := discovery.EtcdRegistry{Client: member.Server.Client(), TTL: time.Minute}

	var run atomic.Int32 // each run names its nodes anew

	for _, bc := range []struct {
		name     string
		reg      discovery.Registry
		interval time.Duration
	}{
		{"watch", reg, time.Hour},
		{"poll/interval=1s", pollOnly{reg}, time.Second},
		{"poll/interval=10s", pollOnly{reg}, discovery.DefaultInterval},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := nodeOptions{registry: func(*configs.Config) discovery.Registry { return bc.reg }, interval: bc.interval}
			within := 2*bc.interval + converge
			idA, idB := fmt.Sprintf("a-%d", run.Add(1)), fmt.Sprintf("b-%d", run.Add(1))

			na, stopA := startNode(b, idA, "10.5.0.2", opts)
			nb, stopB := startNode(b, idB, "10.6.0.2", opts)

			defer func() {
				stopA()
				stopB()

				// The next run must not list these nodes.
				for _, id := range []string{idA, idB} {
					if err := reg.Remove(context.Background(), id); err != nil {
						b.Error(err)
					}
				}
			}()

			na.waitMembers(b, within, idA+"=10.5.0.2", idB+"=10.6.0.2")

			var worst time.Duration

			b.ResetTimer()

			for i := range b.N {
				if bc.interval < time.Hour {
					// A change comes at any point of A's polling cycle:
					// without this wait each one would follow A's last
					// refresh at once, and always wait a whole interval.
					b.StopTimer()
					<-time.After(rand.N(bc.interval))
					b.StartTimer()
				}

				addr := fmt.Sprintf("10.6.%d.%d", 1+i/250%250, 2+i%250)
				start := time.Now()

				nb.setAddress(b, addr)
				na.waitMembers(b, within, idA+"=10.5.0.2", idB+"="+addr)

				worst = max(worst, time.Since(start))
			}

			b.StopTimer()
			b.ReportMetric(float64(worst)/float64(time.Millisecond), "max-ms")
		})
	}
}
