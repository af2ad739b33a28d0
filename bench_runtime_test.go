//go:build e2e

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/talosbox/talosbox/internal/cri"
)

// BenchmarkCRIContainerdStart measures the CRI containerd instance, as a
// node renders it, from exec to SERVING on its gRPC health service (what
// machined's health check asks), and reports its idle RSS.
// scripts/bench-runtime.sh runs it.
func BenchmarkCRIContainerdStart(b *testing.B) {
	bin := buildBinary(b)
	dir, err := os.MkdirTemp("", "tbctrd")
	if err != nil {
		b.Fatal(err)
	}

	b.Cleanup(func() { os.RemoveAll(dir) })

	conf := filepath.Join(dir, "conf.d")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		b.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(conf, cri.BasePartName), cri.BasePart(cri.BaseOptions{RestrictOOMScoreAdj: true}), 0o600); err != nil {
		b.Fatal(err)
	}

	merged, _, err := cri.MergeParts(conf)
	if err != nil {
		b.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(conf, "cri.toml"), merged, 0o600); err != nil {
		b.Fatal(err)
	}

	sock := filepath.Join(dir, "c.sock")
	main := filepath.Join(dir, "containerd.toml")

	if err := os.WriteFile(main, cri.CRIConfig(cri.InstanceOptions{
		Root: filepath.Join(dir, "root"), State: filepath.Join(dir, "state"), Socket: sock,
		Imports: []string{filepath.Join(conf, "cri.toml")},
	}), 0o600); err != nil {
		b.Fatal(err)
	}

	var rssKiB int

	for b.Loop() {
		cmd := exec.Command(bin, "containerd", "--config", main)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}

		waitServing(b, sock)

		b.StopTimer()

		rssKiB = vmRSS(b, cmd.Process.Pid)

		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.Remove(sock)

		b.StartTimer()
	}

	b.ReportMetric(float64(rssKiB)/1024, "MiB-rss")
}

func waitServing(b *testing.B, sock string) {
	deadline := time.Now().Add(30 * time.Second)

	for time.Now().Before(deadline) {
		if conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials())); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})

			cancel()
			conn.Close()

			if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				return
			}
		}

		time.Sleep(2 * time.Millisecond) // polling the condition being measured
	}

	b.Fatal("containerd did not serve within 30s")
}

func vmRSS(b *testing.B, pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}

	for l := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}

	return 0
}
