//go:build e2e

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/images"
)

// What the Kubernetes lifecycle test measures with (an API-server prober and
// the load client's tallies) and the convert-k8s part of it.

// apiserverProbe asks every control plane's API server /readyz every
// 250 ms, with the admin credentials, and keeps the longest stretch each
// did not answer: the unavailability window, as a client sees it.
type apiserverProbe struct {
	hc   *http.Client
	cps  []string
	stop chan struct{}
	done sync.WaitGroup

	mu      sync.Mutex
	longest map[string]time.Duration
	since   map[string]time.Time // the current outage's start
}

func startAPIServerProbe(t *testing.T, kubeconfig string, cps []string) *apiserverProbe {
	t.Helper()

	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	var kc struct {
		Clusters []struct {
			Cluster struct {
				CA string `yaml:"certificate-authority-data"`
			} `yaml:"cluster"`
		} `yaml:"clusters"`
		Users []struct {
			User struct {
				Cert string `yaml:"client-certificate-data"`
				Key  string `yaml:"client-key-data"`
			} `yaml:"user"`
		} `yaml:"users"`
	}

	if err := yaml.Unmarshal(data, &kc); err != nil || len(kc.Clusters) == 0 || len(kc.Users) == 0 {
		t.Fatalf("kubeconfig: %v", err)
	}

	dec := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }

	cert, err := tls.X509KeyPair(dec(kc.Users[len(kc.Users)-1].User.Cert), dec(kc.Users[len(kc.Users)-1].User.Key))
	if err != nil {
		t.Fatal(err)
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(dec(kc.Clusters[len(kc.Clusters)-1].Cluster.CA))

	p := &apiserverProbe{
		hc: &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}}},
		cps: cps, stop: make(chan struct{}), longest: map[string]time.Duration{}, since: map[string]time.Time{},
	}

	for _, cp := range cps {
		p.done.Add(1)

		go p.watch(cp)
	}

	t.Cleanup(p.finish)

	return p
}

func (p *apiserverProbe) get(cp, path string) (string, error) {
	resp, err := p.hc.Get("https://" + cp + ":6443" + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()

	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}

	return string(body), nil
}

func (p *apiserverProbe) watch(cp string) {
	defer p.done.Done()

	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()

	for {
		_, err := p.get(cp, "/readyz")
		now := time.Now()

		p.mu.Lock()
		if err != nil && p.since[cp].IsZero() {
			p.since[cp] = now
		}

		if err == nil && !p.since[cp].IsZero() {
			p.longest[cp] = max(p.longest[cp], now.Sub(p.since[cp]))
			p.since[cp] = time.Time{}
		}
		p.mu.Unlock()

		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

func (p *apiserverProbe) finish() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
		p.done.Wait()
	}
}

// windows are the longest outages, by control plane.
func (p *apiserverProbe) windows() map[string]time.Duration {
	p.finish()

	p.mu.Lock()
	defer p.mu.Unlock()

	return p.longest
}

// serverVersion is the gitVersion one API server reports.
func (p *apiserverProbe) serverVersion(cp string) string {
	body, err := p.get(cp, "/version")
	if err != nil {
		return err.Error()
	}

	var v struct {
		GitVersion string `json:"gitVersion"`
	}

	json.Unmarshal([]byte(body), &v) //nolint:errcheck // an empty version fails the caller's check

	return v.GitVersion
}

// loadTally is one "ok=N failed=M" line of the load client's log.
type loadTally struct {
	at         time.Time
	ok, failed int
}

var tallyLine = regexp.MustCompile(`^(\S+) ok=(\d+) failed=(\d+)$`)

func parseLoadLog(log string) (tallies []loadTally, failures []string) {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, " FAIL ") {
			failures = append(failures, l)
			continue
		}

		m := tallyLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}

		at, err := time.Parse("2006-01-02T15:04:05.000Z", m[1])
		if err != nil {
			continue
		}

		ok, _ := strconv.Atoi(m[2])
		failed, _ := strconv.Atoi(m[3])
		tallies = append(tallies, loadTally{at, ok, failed})
	}

	return tallies, failures
}

// answeredAfter: some request succeeded after moment b (a tally after b
// counts more successes than the last one before it).
func answeredAfter(tallies []loadTally, b time.Time) bool {
	before := -1

	for _, tl := range tallies {
		if !tl.at.After(b) {
			before = tl.ok
			continue
		}

		if before >= 0 && tl.ok > before {
			return true
		}
	}

	return false
}

// testConvertK8s makes the cluster look bootkube-made: DaemonSets named
// as in Talos 0.9's self-hosted control plane (running the echo image, not a second control plane),
// plus pod-checkpointer; convert-k8s must remove them all and leave the
// static pods serving.
func testConvertK8s(t *testing.T, dc *dockerCluster, cps []string, w string) {
	dss := []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "pod-checkpointer"}

	for _, name := range dss {
		manifest := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":%[1]q,"namespace":"kube-system","labels":{"k8s-app":%[1]q,"tier":"control-plane"}},
"spec":{"selector":{"matchLabels":{"k8s-app":%[1]q}},"template":{"metadata":{"labels":{"k8s-app":%[1]q,"tier":"control-plane"}},
"spec":{"nodeSelector":{"node-role.kubernetes.io/control-plane":""},"tolerations":[{"operator":"Exists"}],
"containers":[{"name":"c","image":%[2]q}]}}}}`, name, images.EchoImage().String())

		f := filepath.Join(dc.dir, name+"-ds.json")
		if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}

		dc.kube(t, "apply", "-f", f)
	}

	for _, name := range dss {
		dc.kube(t, "-n", "kube-system", "rollout", "status", "daemonset/"+name, "--timeout=5m")
	}

	out := dc.ok("-n", cps[0], "convert-k8s", "--force")

	for _, want := range []string{
		"current self-hosted status: true",
		"waiting for static pod definitions to be generated",
		`deleting daemonset "pod-checkpointer"`,
		`deleting daemonset "kube-apiserver"`,
		`waiting for static pods for "kube-scheduler" to be present in the API server state`,
		"conversion process completed successfully",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("convert-k8s output lacks %q:\n%s", want, out)
		}
	}

	waitFor(t, 6*time.Minute, "the DaemonSets gone", func() error {
		out, err := dc.kubectl("-n", "kube-system", "get", "daemonsets", "-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}

		for _, name := range dss {
			if slices.Contains(strings.Fields(out), name) {
				return fmt.Errorf("daemonsets: %s", out)
			}
		}

		return nil
	})

	dc.ok("-n", cps[0], "health", "--control-plane-nodes", strings.Join(cps, ","), "--worker-nodes", w, "--wait-timeout", "5m")

	if out := dc.ok("-n", cps[0], "convert-k8s"); !strings.Contains(out, "current self-hosted status: false") {
		t.Errorf("a second convert-k8s:\n%s", out)
	}

}

// nodeNFT runs the host's nft in a node container's network namespace.
func nodeNFT(t *testing.T, dc *dockerCluster, container string, args ...string) string {
	t.Helper()

	ins, err := dc.docker.ContainerInspect(context.Background(), container, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(ins.Container.State.Pid), "-n", "nft"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("nft %s in %s: %v\n%s", strings.Join(args, " "), container, err, out)
	}

	return string(out)
}

var natPreroutingHandle = regexp.MustCompile(`chain nat-prerouting \{ # handle (\d+)`)

// testKubeProxyReplaced replaces the worker's kube-proxy and checks the
// Service at clusterIP stays in its service-ips map until, and after, the
// new one's first sync. A kube-proxy image without /etc/protocols read
// "6" back where it wrote "tcp" and deleted every element on that sync,
// leaving Services unrouted for an hour. The first sync is seen in nft:
// it recreates the base chains, which get new handles.
func testKubeProxyReplaced(t *testing.T, dc *dockerCluster, node, clusterIP string) {
	element := clusterIP + " . tcp . 80 : goto "
	routed := func() bool {
		return strings.Contains(nodeNFT(t, dc, node, "list", "map", "ip", "kube-proxy", "service-ips"), element)
	}

	handle := func() string {
		m := natPreroutingHandle.FindStringSubmatch(nodeNFT(t, dc, node, "-a", "list", "table", "ip", "kube-proxy"))
		if m == nil {
			t.Fatalf("no nat-prerouting chain in %s's kube-proxy table", node)
		}

		return m[1]
	}

	// One run found the Service missing here on the first look, the map
	// read once: wait for it to be routed before replacing kube-proxy,
	// with a deadline, and say how long it took, so the precondition is
	// not confused with the loss this test is about.
	start := time.Now()
	waitFor(t, 2*time.Minute, node+"'s service-ips routing "+clusterIP, func() error {
		if !routed() {
			return errors.New(nodeNFT(t, dc, node, "list", "map", "ip", "kube-proxy", "service-ips"))
		}

		return nil
	})

	if d := time.Since(start); d > time.Second {
		t.Logf("%s's service-ips had %s after %s", node, element, d.Round(time.Millisecond))
	}

	before := handle()
	dc.kube(t, "-n", "kube-system", "delete", "pod", "-l", "k8s-app=kube-proxy", "--field-selector", "spec.nodeName="+node, "--wait=false")

	lost := false

	waitFor(t, 4*time.Minute, "the new kube-proxy's first sync on "+node, func() error {
		if !routed() {
			lost = true
		}

		if handle() == before {
			return errors.New("the base chains are the old kube-proxy's")
		}

		return nil
	})

	if lost || !routed() {
		t.Errorf("%s's service-ips lost %s while kube-proxy was replaced (after its first sync: %v):\n%s", node, element, !routed(),
			nodeNFT(t, dc, node, "list", "map", "ip", "kube-proxy", "service-ips"))
	}
}
