package apid

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/role"
)

// benchCalls runs b.N calls spread over clients goroutines, each with its
// own mTLS connection, and reports the latency percentiles.
func benchCalls(b *testing.B, clients int, addr string, call func(ctx context.Context, cc *grpc.ClientConn) error) {
	b.Helper()

	conns := make([]*grpc.ClientConn, clients)
	for i := range conns {
		conns[i] = dial(b, addr, clientCert(b, string(role.Admin)))

		if err := call(context.Background(), conns[i]); err != nil { // connect outside the timing
			b.Fatal(err)
		}
	}

	lat := make([][]time.Duration, clients)

	var (
		wg   sync.WaitGroup
		next = make(chan struct{}, clients)
		errs = make(chan error, clients)
	)

	b.ResetTimer()

	go func() {
		for range b.N {
			next <- struct{}{}
		}

		close(next)
	}()

	for i := range clients {
		wg.Go(func() {
			for range next {
				start := time.Now()

				if err := call(context.Background(), conns[i]); err != nil {
					errs <- err
					return
				}

				lat[i] = append(lat[i], time.Since(start))
			}
		})
	}

	wg.Wait()
	b.StopTimer()

	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}

	all := slices.Concat(lat...)
	slices.Sort(all)

	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
}

var benchClients = []int{1, 16, 64}

func BenchmarkVersion(b *testing.B) {
	call := func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := machineClient(cc).Version(ctx, &emptypb.Empty{})
		return err
	}

	for _, n := range benchClients {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchCalls(b, n, shared.addr, call) })
	}
}

func BenchmarkGet(b *testing.B) {
	req := &resource.GetRequest{Type: "machinestatus", Id: runtime.MachineID}
	call := func(ctx context.Context, cc *grpc.ClientConn) error {
		_, err := resourceClient(cc).Get(ctx, req)
		return err
	}

	for _, n := range benchClients {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchCalls(b, n, shared.addr, call) })
	}
}

// BenchmarkProxied compares Version served by the endpoint with Version
// forwarded by it to a second node (one more mTLS hop on loopback).
func BenchmarkProxied(b *testing.B) {
	nb := nodeB(b)

	for _, mode := range []struct {
		name string
		node string
	}{{"local", ""}, {"proxied", nb.addr}} {
		call := func(ctx context.Context, cc *grpc.ClientConn) error {
			if mode.node != "" {
				ctx = withNode(ctx, mode.node)
			}

			_, err := machineClient(cc).Version(ctx, &emptypb.Empty{})

			return err
		}

		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/clients=%d", mode.name, n), func(b *testing.B) { benchCalls(b, n, shared.addr, call) })
		}
	}
}
