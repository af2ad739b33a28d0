package bus_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
)

// BenchmarkUpdate measures sustained update throughput with N watchers
// draining every event. The writer never lets a watcher fall more than
// half a queue behind, so the number is what the bus delivers end to end,
// not how fast it can drop events.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{0, 1, 10, 100} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			benchUpdate(b, n)
		})
	}
}

func benchUpdate(b *testing.B, watchers int) {
	const queue = 1024

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s := bus.NewStore(bus.StoreOptions{WatchQueue: queue})

	r := newRes("a", 0)
	if err := s.Create(ctx, r); err != nil {
		b.Fatal(err)
	}

	received := make([]atomic.Int64, watchers)

	var wg sync.WaitGroup

	for i := range watchers {
		w, err := s.WatchKind(ctx, kind)
		if err != nil {
			b.Fatal(err)
		}

		wg.Go(func() {
			for ev := range w.Events() {
				if ev.Type == bus.Errored {
					panic(ev.Err)
				}

				if ev.Type == bus.Updated {
					received[i].Add(1)
				}
			}
		})
	}

	slowest := func() int64 {
		m := int64(1 << 62)
		for i := range received {
			m = min(m, received[i].Load())
		}

		return m
	}

	b.ReportAllocs()
	b.ResetTimer()

	start := time.Now()

	for i := range b.N {
		if watchers > 0 && i%64 == 0 {
			for int64(i)-slowest() > queue/2 {
				runtime.Gosched()
			}
		}

		r.TypedSpec().Value = i
		if err := s.Update(ctx, r); err != nil {
			b.Fatal(err)
		}
	}

	for watchers > 0 && slowest() < int64(b.N) {
		runtime.Gosched()
	}

	elapsed := time.Since(start)

	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "updates/s")

	if watchers > 0 {
		b.ReportMetric(float64(b.N*watchers)/elapsed.Seconds(), "events/s")
	}

	cancel()
	wg.Wait()
}

// BenchmarkWatchLatency measures the time from the start of Update until
// each watcher holds the event, one notification at a time (an idle
// system, as a node mostly is).
func BenchmarkWatchLatency(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			benchLatency(b, n)
		})
	}
}

func benchLatency(b *testing.B, watchers int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s := bus.NewStore(bus.StoreOptions{})

	r := newRes("a", 0)
	if err := s.Create(ctx, r); err != nil {
		b.Fatal(err)
	}

	sent := make([]time.Time, b.N)
	lat := make([][]time.Duration, watchers)
	acks := make(chan struct{}, watchers)

	var wg sync.WaitGroup

	for i := range watchers {
		w, err := s.WatchKind(ctx, kind)
		if err != nil {
			b.Fatal(err)
		}

		lat[i] = make([]time.Duration, 0, b.N)

		wg.Go(func() {
			for ev := range w.Events() {
				if ev.Type != bus.Updated {
					continue
				}

				lat[i] = append(lat[i], time.Since(sent[value(ev.Resource)]))
				acks <- struct{}{}
			}
		})
	}

	b.ResetTimer()

	for i := range b.N {
		sent[i] = time.Now()
		r.TypedSpec().Value = i

		if err := s.Update(ctx, r); err != nil {
			b.Fatal(err)
		}

		for range watchers {
			<-acks
		}
	}

	b.StopTimer()
	cancel()
	wg.Wait()

	reportPercentiles(b, slices.Concat(lat...))
}

func reportPercentiles(b *testing.B, all []time.Duration) {
	if len(all) == 0 {
		return
	}

	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}
