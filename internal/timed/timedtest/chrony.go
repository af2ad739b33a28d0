// Package timedtest runs a real NTP server for tests: Debian's chronyd on
// a loopback port.
package timedtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beevik/ntp"
)

// LockedBuffer collects a child's output while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()

	return l.b.String()
}

// FreeUDPPort returns a loopback port nothing listens on; the kernel
// answers a datagram sent there with "port unreachable".
func FreeUDPPort(t testing.TB) int {
	t.Helper()

	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	port := c.LocalAddr().(*net.UDPAddr).Port //nolint:forcetypeassert // a udp listener
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	return port
}

// StartChrony runs Debian's chronyd as an NTP server on 127.0.0.1 and
// returns its address once it answers with a valid response. -x keeps
// it away from the host clock, "local stratum 8" makes it serve its own
// clock as a real (if unsynchronised upstream) server would.
func StartChrony(t testing.TB) string {
	t.Helper()

	bin, err := exec.LookPath("chronyd")
	if err != nil {
		for _, p := range []string{"/usr/sbin/chronyd", "/sbin/chronyd"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
				break
			}
		}
	}

	if err != nil {
		t.Fatalf("chronyd is needed as the NTP peer of these tests: apt-get install chrony (%v)", err)
	}

	dir := t.TempDir()
	port := FreeUDPPort(t)
	conf := filepath.Join(dir, "chrony.conf")

	err = os.WriteFile(conf, fmt.Appendf(nil, `local stratum 8
allow 127.0.0.1
bindaddress 127.0.0.1
port %d
cmdport 0
pidfile %s
`, port, filepath.Join(dir, "chronyd.pid")), 0o644)
	if err != nil {
		t.Fatal(err)
	}

	// -u root: the default user could not clean up in the test's 0700
	// directory. -d: foreground, logging to stderr.
	cmd := exec.Command(bin, "-d", "-x", "-u", "root", "-f", conf)

	var out LockedBuffer

	cmd.Stdout, cmd.Stderr = &out, &out

	if err := cmd.Start(); err != nil {
		t.Fatalf("start chronyd: %v", err)
	}

	var waitErr error

	exited := make(chan struct{})

	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)

		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(20 * time.Second)

	for {
		resp, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: 500 * time.Millisecond})
		if err == nil {
			err = resp.Validate()
		}

		if err == nil {
			return addr
		}

		if time.Now().After(deadline) {
			t.Fatalf("chronyd on %s gave no valid answer in time (last: %v):\n%s", addr, err, out.String())
		}

		// Until it binds its port, chronyd's start is only visible as
		// refusals; between queries, watch for it dying instead.
		select {
		case <-exited:
			t.Fatalf("chronyd exited (%v):\n%s", waitErr, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
