package etcd

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/talosbox/talosbox/configs"
)

// benchEtcdEnv names an upstream etcd binary to measure next to the
// embedded member (scripts/bench-etcd.sh sets it).
const benchEtcdEnv = "TALOSBOX_BENCH_ETCD"

// Settings both members share, so the comparison is like for like: etcd's
// default raft timers and a snapshot count that etcd 3.4 and 3.7 agree on.
const (
	benchHeartbeatMs  = 100
	benchElectionMs   = 1000
	benchSnapshots    = 10000
	benchValueSize    = 256
	benchThroughputCs = 16
)

// BenchmarkPut measures puts on a single member over loopback mutual TLS,
// from network clients as kube-apiserver would use it:
//
//	sequential   one client, one put at a time: p50/p99 latency
//	16-clients   16 clients with a connection each: puts per second
//
// "embedded" is this package's member in the benchmark process, "upstream"
// the binary named by $TALOSBOX_BENCH_ETCD with the same settings and
// certificates, and "in-process" the embedded member through Client().
func BenchmarkPut(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		s, o := benchEmbedded(b)
		benchPuts(b, func() *clientv3.Client { return benchClient(b, o) })

		b.Run("in-process/sequential", func(b *testing.B) { benchSequential(b, s.Client()) })
	})

	bin := os.Getenv(benchEtcdEnv)
	if bin == "" {
		b.Logf("set %s to an etcd binary to compare with upstream", benchEtcdEnv)

		return
	}

	b.Run("upstream", func(b *testing.B) {
		o := benchUpstream(b, bin)
		benchPuts(b, func() *clientv3.Client { return benchClient(b, o) })
	})
}

func benchPuts(b *testing.B, newClient func() *clientv3.Client) {
	b.Run("sequential", func(b *testing.B) { benchSequential(b, newClient()) })

	b.Run(fmt.Sprintf("%d-clients", benchThroughputCs), func(b *testing.B) {
		clients := make([]*clientv3.Client, benchThroughputCs)
		for i := range clients {
			clients[i] = newClient()
		}

		benchConcurrent(b, clients)
	})
}

func benchOptions(b *testing.B) Options {
	o := testOptions(b, newTestCA(b), "bench")
	o.HeartbeatInterval = benchHeartbeatMs * time.Millisecond
	o.ElectionTimeout = benchElectionMs * time.Millisecond
	o.ExtraArgs = configs.ArgsOf(map[string]string{"snapshot-count": strconv.Itoa(benchSnapshots)})
	o.Log = nil

	return o
}

func benchEmbedded(b *testing.B) (*Server, Options) {
	s, o := startMember(b, b.Context(), benchOptions(b), Bootstrap)

	return s, o
}

// benchUpstream runs the upstream binary as a one-member cluster with the
// certificates WriteCerts issues for the embedded member.
func benchUpstream(b *testing.B, bin string) Options {
	o := benchOptions(b)
	if err := WriteCerts(o); err != nil {
		b.Fatal(err)
	}

	pkiFile := func(name string) string { return filepath.Join(o.PKIDir, name) }
	peer, client := o.AdvertisePeerURLs[0], o.AdvertiseClientURLs[0]

	cmd := exec.Command(bin,
		"--name", o.Name, "--data-dir", o.DataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", o.Name+"="+peer, "--initial-cluster-state", "new",
		"--cert-file", pkiFile(ServerCertFile), "--key-file", pkiFile(ServerKeyFile),
		"--trusted-ca-file", pkiFile(CACertFile), "--client-cert-auth",
		"--peer-cert-file", pkiFile(PeerCertFile), "--peer-key-file", pkiFile(PeerKeyFile),
		"--peer-trusted-ca-file", pkiFile(CACertFile), "--peer-client-cert-auth",
		"--heartbeat-interval", strconv.Itoa(benchHeartbeatMs), "--election-timeout", strconv.Itoa(benchElectionMs),
		"--snapshot-count", strconv.Itoa(benchSnapshots),
		"--logger", "zap", "--log-level", "error",
	)

	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs

	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}

	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	cli := benchClient(b, o)
	eventually(b, 30*time.Second, "upstream etcd serves", func() error {
		ctx, cancel := context.WithTimeout(b.Context(), time.Second)
		defer cancel()

		_, err := cli.Get(ctx, "health")
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, logs.tail(4096))
		}

		return err
	})

	return o
}

func benchClient(b *testing.B, o Options) *clientv3.Client {
	tlsCfg, err := ClientTLSConfig(o.PKIDir)
	if err != nil {
		b.Fatal(err)
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: o.AdvertiseClientURLs, TLS: tlsCfg, DialTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}

	b.Cleanup(func() { _ = cli.Close() })

	// Connect outside the timing.
	if _, err := cli.Get(b.Context(), "warm-up"); err != nil {
		b.Fatal(err)
	}

	return cli
}

func benchValue() string {
	v := make([]byte, benchValueSize)
	_, _ = rand.Read(v)

	return string(v)
}

func benchSequential(b *testing.B, cli *clientv3.Client) {
	value := benchValue()
	lat := make([]time.Duration, 0, b.N)

	b.ResetTimer()

	for i := range b.N {
		start := time.Now()

		if _, err := cli.Put(b.Context(), fmt.Sprintf("/bench/%08d", i%1000), value); err != nil {
			b.Fatal(err)
		}

		lat = append(lat, time.Since(start))
	}

	b.StopTimer()
	reportLatency(b, lat)
}

func benchConcurrent(b *testing.B, clients []*clientv3.Client) {
	value := benchValue()
	next := make(chan int, len(clients))
	errs := make(chan error, len(clients))

	var wg sync.WaitGroup

	b.ResetTimer()

	start := time.Now()

	go func() {
		for i := range b.N {
			next <- i
		}

		close(next)
	}()

	for _, cli := range clients {
		wg.Go(func() {
			failed := false

			for i := range next {
				if failed {
					continue // drain, so the feeder never blocks
				}

				if _, err := cli.Put(b.Context(), fmt.Sprintf("/bench/%08d", i%10000), value); err != nil {
					errs <- err
					failed = true
				}
			}
		})
	}

	wg.Wait()

	elapsed := time.Since(start)

	b.StopTimer()

	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}

	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "puts/s")
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}

	slices.Sort(lat)

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
}
