package provision

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// testLabel marks objects the tests create outside of clusters (the image, plain networks).
const testLabel = "talosbox.test"

// The tiny image is built once per test binary, on first use, and removed by TestMain: it is
// the one fixture shared by tests.
var (
	tmpDir     string
	imageOnce  sync.Once
	imageTag   string
	imageErr   error
	subnetMu   sync.Mutex
	subnetsOut = map[netip.Prefix]bool{}
)

func TestMain(m *testing.M) {
	var err error
	tmpDir, err = os.MkdirTemp("", "provision-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if imageTag != "" {
		removeTestImage(imageTag)
	}
	_ = os.RemoveAll(tmpDir)
	os.Exit(code)
}

func removeTestImage(tag string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := New(ctx, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "removing test image:", err)
		return
	}
	defer d.Close()
	if _, err := d.api.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !isNotFound(err) {
		fmt.Fprintln(os.Stderr, "removing test image:", err)
	}
}

// testCtx is a context that ends before the test's deadline, so that a hung engine call
// fails the test with a message rather than killing the binary.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// newDocker connects to the local engine. The tests need a real one: this package is a
// Docker client and nothing else would test it.
func newDocker(t *testing.T) *Docker {
	t.Helper()
	d, err := New(testCtx(t, 15*time.Second), Options{StopTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("these tests need a Docker Engine: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// tinyImage returns the tag of an image built from testdata/tiny, building it on first use.
func tinyImage(t *testing.T, d *Docker) string {
	t.Helper()
	imageOnce.Do(func() {
		bin := filepath.Join(tmpDir, "tiny")
		cmd := exec.Command("go", "build", "-o", bin, "./testdata/tiny")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			imageErr = fmt.Errorf("go build testdata/tiny: %w\n%s", err, out)
			return
		}
		tag := "talosbox-provision-test:" + randomHex(4)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		imageErr = d.BuildImage(ctx, BuildRequest{
			Tag:        tag,
			Binary:     bin,
			Applets:    []string{"tiny", "/sbin/init"},
			Entrypoint: []string{"/talosbox", "serve"},
			Env:        []string{"TALOSBOX_PLATFORM=container"},
			Labels:     map[string]string{testLabel: "1"},
		}, testWriter{t})
		if imageErr == nil {
			imageTag = tag
		}
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageTag
}

// testWriter sends builder output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// clusterName is unique per call, so that concurrent test runs never share a cluster.
func clusterName() string { return "tbtest-" + randomHex(4) }

// freeSubnet returns a /24 under 10.213.0.0/16 that no Docker network uses and that this test
// binary has not handed out yet. It starts at a random /24 so that concurrent test binaries
// rarely race for the same one.
func freeSubnet(t *testing.T, d *Docker) netip.Prefix {
	t.Helper()
	nets, err := d.api.NetworkList(testCtx(t, 10*time.Second), client.NetworkListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var used []netip.Prefix
	for _, n := range nets.Items {
		for _, c := range n.IPAM.Config {
			if c.Subnet.IsValid() {
				used = append(used, c.Subnet)
			}
		}
	}
	subnetMu.Lock()
	defer subnetMu.Unlock()
	var rb [2]byte
	_, _ = rand.Read(rb[:])
	start := int(binary.BigEndian.Uint16(rb[:]) % 256)
next:
	for i := range 256 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte((start + i) % 256), 0}), 24)
		if subnetsOut[p] {
			continue
		}
		for _, u := range used {
			if u.Overlaps(p) {
				continue next
			}
		}
		subnetsOut[p] = true
		return p
	}
	t.Fatal("no free /24 left under 10.213.0.0/16")
	return netip.Prefix{}
}

// hostAddr is the i-th host address of p (1 is the gateway by default).
func hostAddr(p netip.Prefix, i int) netip.Addr {
	a := p.Addr()
	for range i {
		a = a.Next()
	}
	return a
}

// destroyOnCleanup makes sure the cluster is gone when the test ends, whatever happened, and
// that nothing carrying its label is left behind.
func destroyOnCleanup(t *testing.T, d *Docker, name string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Destroy(ctx, name, nil); err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("cleanup: %v", err)
		}
		assertGone(t, d, name)
	})
}

// assertGone checks, by label, that no container, network or volume of the cluster is left.
func assertGone(t *testing.T, d *Docker, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objs, err := d.find(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !objs.empty() {
		t.Errorf("cluster %s left behind: %s", name, describe(objs))
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		<-tick.C
	}
}

// tinyReport is what testdata/tiny reports.
type tinyReport struct {
	Args          []string `json:"args"`
	Hostname      string   `json:"hostname"`
	Platform      string   `json:"platform"`
	Env           string   `json:"env"`
	TmpMode       string   `json:"tmpMode"`
	Applet        string   `json:"applet"`
	StateWritable bool     `json:"stateWritable"`
	Cat           string   `json:"cat"`
}

// dialReport reads tiny's report from a published port, retrying until tiny listens.
func dialReport(t *testing.T, addr string) tinyReport {
	t.Helper()
	var line []byte
	waitFor(t, 15*time.Second, "a report from "+addr, func() (bool, error) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		line, err = bufio.NewReader(c).ReadBytes('\n')
		// docker-proxy accepts before the container listens, then closes: retry.
		return err == nil, err
	})
	var r tinyReport
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("report from %s: %v: %q", addr, err, line)
	}
	return r
}
