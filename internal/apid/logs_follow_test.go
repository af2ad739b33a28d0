package apid

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/api/machine"
	imachine "github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// chatter is a service that, once started is closed, writes numbered
// 100-byte lines at rate bytes/s for dur, then "done".
func chatter(start <-chan struct{}, rate int, dur time.Duration) supervisor.Service {
	return supervisor.Service{
		ID: "chatter",
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, log io.Writer) error {
			fmt.Fprintln(log, "ready")

			select {
			case <-start:
			case <-ctx.Done():
				return nil
			}

			const line = 100
			perTick := rate / line / 100 // lines every 10 ms
			pad := strings.Repeat("x", line-len("seq=00000000 \n"))
			tick := time.NewTicker(10 * time.Millisecond) // load pacing, not synchronisation
			defer tick.Stop()

			end := time.Now().Add(dur)
			seq := 0

			for time.Now().Before(end) {
				for range perTick {
					fmt.Fprintf(log, "seq=%08d %s\n", seq, pad)
					seq++
				}

				select {
				case <-tick.C:
				case <-ctx.Done():
					return nil
				}
			}

			fmt.Fprintf(log, "done %d\n", seq)
			<-ctx.Done()

			return nil
		}),
	}
}

// followLogs runs a node with the chatter service and follows its log
// through apid. It returns how many lines were written, how many arrived,
// how many were missing from the numbered sequence, and the process's
// peak RSS in KiB.
func followLogs(tb testing.TB, rate int, dur time.Duration) (written, received, lost int, hwmKiB int) {
	tb.Helper()

	start := make(chan struct{})
	dir := tb.TempDir()

	e, err := startEnv(dir, nodeConfig(tb, false), "127.0.0.1:0", func(o *imachine.Options) {
		o.EarlyServices = func(*imachine.Node) []supervisor.Service { return []supervisor.Service{chatter(start, rate, dur)} }
	})
	if err != nil {
		tb.Fatal(err)
	}

	tb.Cleanup(func() { e.stop() }) //nolint:errcheck // reported by the other tests

	e.waitServing(tb, false)

	ctx, cancel := context.WithTimeout(context.Background(), dur+time.Minute)
	defer cancel()

	stream, err := machineClient(dial(tb, e.addr, clientCert(tb, "os:admin"))).Logs(ctx, &machine.LogsRequest{Namespace: "system", Id: "chatter", Follow: true, TailLines: -1})
	if err != nil {
		tb.Fatal(err)
	}

	pr, pw := io.Pipe()

	go func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				pw.CloseWithError(err)
				return
			}

			pw.Write(msg.GetBytes()) //nolint:errcheck // the reader reports
		}
	}()

	sc := bufio.NewScanner(pr)
	next := 0

	for sc.Scan() {
		text := sc.Text()

		switch {
		case text == "ready":
			close(start)
		case strings.HasPrefix(text, "done "):
			written, _ = strconv.Atoi(strings.TrimPrefix(text, "done "))
			lost += written - next
			hwmKiB = peakRSS()

			return written, received, lost, hwmKiB
		case strings.HasPrefix(text, "seq="):
			n, err := strconv.Atoi(text[4:12])
			if err != nil {
				tb.Fatalf("garbled line %q", text)
			}

			if n < next {
				tb.Fatalf("line %d after %d: duplicated or out of order", n, next-1)
			}

			lost += n - next
			next = n + 1
			received++
		}
	}

	tb.Fatalf("log stream ended early: %v", sc.Err())

	return
}

func peakRSS() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}

	return 0
}

// TestLogsFollowLosesNothing: a follower that keeps up gets every line, in
// order, through apid.
func TestLogsFollowLosesNothing(t *testing.T) {
	written, received, lost, _ := followLogs(t, 1<<20, time.Second)

	if written < 5000 || lost != 0 || received != written {
		t.Fatalf("written %d, received %d, lost %d", written, received, lost)
	}
}

// BenchmarkLogsFollow10MBps writes 10 MB/s for 3 s into a service log
// followed through apid, and reports lines lost (0 while the follower
// stays inside the 1 MiB ring) and the process's peak RSS.
func BenchmarkLogsFollow10MBps(b *testing.B) {
	for range b.N {
		written, received, lost, hwm := followLogs(b, 10<<20, 3*time.Second)
		b.ReportMetric(float64(written), "lines-written")
		b.ReportMetric(float64(received), "lines-received")
		b.ReportMetric(float64(lost), "lines-lost")
		b.ReportMetric(float64(hwm)/1024, "peak-RSS-MiB")
	}
}
