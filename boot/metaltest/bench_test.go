//go:build e2e

package metaltest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/internal/client"
)

// baseline is boot/baseline built static: the reference /init.
var baseline = sync.OnceValues(func() (string, error) {
	return buildInWork("baseline", func(_, out string) *exec.Cmd {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./boot/baseline")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")

		return cmd
	})
})

// BenchmarkMetalBoot boots, per iteration and in turns so that the
// machine's drift hits both alike, the baseline init and talosbox on the
// same kernel and QEMU command line, and reports (medians, seconds):
//
//	baseline-s       QEMU start to the baseline answering on the forward
//	maintenance-s    QEMU start to talosbox's maintenance API answering
//	ratio            maintenance-s / baseline-s
//	apply-s          apply-config to every service up (install included)
//	running-s        QEMU start to every service up, the first boot
//	reboot-s         QEMU start to every service up, booting from the disk
//
// scripts/bench-metal.sh runs it.
func BenchmarkMetalBoot(b *testing.B) {
	base, err := baseline()
	if err != nil {
		b.Fatal(err)
	}

	release, err := qemu.Exclusive()
	if err != nil {
		b.Fatal(err)
	}
	defer release()

	var baseS, maintS, applyS, runS, rebootS []float64

	for i := 0; b.Loop(); i++ {
		bn := newNode(b, nodeOptions{init: base, locked: true})
		baseS = append(baseS, bootBaseline(b, bn).Seconds())

		tn := newNode(b, nodeOptions{disk: true, locked: true})
		m, a, r, rb := bootTalosbox(b, tn)
		maintS, applyS, runS, rebootS = append(maintS, m.Seconds()), append(applyS, a.Seconds()), append(runS, r.Seconds()), append(rebootS, rb.Seconds())

		b.Logf("run %d: baseline %.2fs, maintenance %.2fs, apply %.2fs, running %.2fs, reboot %.2fs", i+1, baseS[i], maintS[i], applyS[i], runS[i], rebootS[i])
	}

	b.ReportMetric(median(baseS), "baseline-s")
	b.ReportMetric(median(maintS), "maintenance-s")
	b.ReportMetric(median(maintS)/median(baseS), "ratio")
	b.ReportMetric(median(applyS), "apply-s")
	b.ReportMetric(median(runS), "running-s")
	b.ReportMetric(median(rebootS), "reboot-s")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)

	return s[len(s)/2]
}

// bootBaseline boots the baseline and returns the time from QEMU's start
// to its first answer through the forward.
func bootBaseline(b *testing.B, n *node) time.Duration {
	n.boot()
	defer n.vm.Kill()

	n.wait("BASELINE-READY", bootTimeout)

	poll(b, n, func(ctx context.Context) error {
		var d net.Dialer

		c, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", n.port))
		if err != nil {
			return err
		}
		defer c.Close()

		if dl, ok := ctx.Deadline(); ok {
			if err := c.SetDeadline(dl); err != nil {
				return err
			}
		}

		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || line != "baseline\n" {
			return fmt.Errorf("answer %q: %v", line, err)
		}

		return nil
	})

	return time.Since(n.started)
}

// pollAttempt bounds one try of the first answer: slirp accepts a
// forwarded connection before the guest listens, and such a try hangs
// rather than fails, so tries are short and frequent for both inits
// alike. It is the resolution of the boot times.
const (
	pollAttempt  = 300 * time.Millisecond
	pollInterval = 50 * time.Millisecond
)

// poll retries try until it succeeds within pollAttempt.
func poll(b *testing.B, n *node, try func(ctx context.Context) error) {
	deadline := time.Now().Add(bootTimeout)

	for {
		ctx, cancel := context.WithTimeout(context.Background(), pollAttempt)
		err := try(ctx)

		cancel()

		if err == nil {
			return
		}

		if time.Now().After(deadline) {
			b.Fatalf("no answer within %s: %v\n%s", bootTimeout, err, n.vm.Tail(30))
		}

		time.Sleep(pollInterval) // a retry's pace, not a synchronisation
	}
}

// bootTalosbox boots talosbox on a blank disk and returns the times to
// the maintenance API's first answer, from apply-config to every service
// up, and from QEMU's start to every service up; then it reboots the
// node and returns the time from the new QEMU's start to every service
// up again, from the disk.
func bootTalosbox(b *testing.B, n *node) (maintenance, apply, running, reboot time.Duration) {
	cp := n.genConfig("bench")

	n.boot()
	defer func() { n.vm.Kill() }()

	n.wait(markMaintenance, bootTimeout)

	poll(b, n, func(ctx context.Context) error {
		// A fresh connection each time, as each talosctl run makes: a
		// kept one would wait out gRPC's reconnect backoff instead.
		c, err := client.New(client.Options{Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", n.port)}, Insecure: true, DialTimeout: pollAttempt})
		if err != nil {
			return err
		}
		defer c.Close()

		_, err = c.Machine.Version(client.WithoutNode(ctx), &emptypb.Empty{})

		return err
	})

	maintenance = time.Since(n.started)

	applied := time.Now()
	n.ok("apply-config", "--insecure", "-f", cp)
	n.wait(markServices, servicesTimeout)

	apply, running = time.Since(applied), time.Since(n.started)

	b.Logf("talosctl memory, every service up:\n%s", n.ok("memory"))

	n.ok("reboot")
	n.waitExit(markRebooting)

	n.boot()
	n.wait(markServices, servicesTimeout)

	return maintenance, apply, running, time.Since(n.started)
}
