//go:build e2e

package main

import (
	"archive/zip"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/availability"
	"github.com/talosbox/talosbox/internal/render"
)

// corednsContainer is a CoreDNS container as `containers -k` lists it.
var corednsContainer = regexp.MustCompile(`(kube-system/coredns-[a-z0-9-]+):coredns\b`)

// testDay2OnDocker runs the operators' everyday commands against a
// Kubernetes cluster in Docker: a pod's sockets by pod (netstat -k), a
// Kubernetes container restarted by its kubelet (restart -k), a capture
// of a node's eth0 read by tcpdump (pcap), the new resources, and a
// support bundle with every file Talos's has and no secret of the config.
func testDay2OnDocker(t *testing.T, dc *dockerCluster, names map[string]string, cp, w string) {
	// The CoreDNS pods: their node and container, from the nodes.
	type podAt struct{ node, pod, container string }

	var coredns []podAt

	for _, n := range []string{dc.ip(0), dc.ip(1), dc.ip(2), w} {
		for _, m := range corednsContainer.FindAllStringSubmatch(dc.okIn(t, "-n", n, "containers", "-k"), -1) {
			coredns = append(coredns, podAt{node: n, pod: m[1], container: m[0]})
		}
	}

	if len(coredns) == 0 {
		t.Fatal("no CoreDNS container on any node")
	}

	c := coredns[0]

	t.Run("netstat -k names the pod listening on 53", func(t *testing.T) {
		out := dc.okIn(t, "-n", c.node, "netstat", "-l", "-k", "-u")
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(c.node) + `\s+udp\S*\s+\d+\s+\d+\s+\S+:53\s+\S+\s+` + regexp.QuoteMeta(c.pod) + `$`)

		if !row.MatchString(out) {
			t.Errorf("netstat -luk on %s has no row for %s on port 53:\n%s", c.node, c.pod, out)
		}

		// Naming the pod shows its sockets only; the node is found among
		// those given.
		out = dc.okIn(t, "-n", strings.Join([]string{dc.ip(0), dc.ip(1), dc.ip(2), w}, ","), "netstat", "-l", "-u", c.pod)
		if !strings.Contains(out, ":53 ") || strings.Contains(out, ":50000 ") {
			t.Errorf("netstat %s:\n%s", c.pod, out)
		}
	})

	t.Run("restart -k: the kubelet starts the container again", func(t *testing.T) {
		pod := strings.TrimPrefix(c.pod, "kube-system/")
		count := func() int {
			out, _ := dc.kubectl("-n", "kube-system", "get", "pod", pod, "-o", `jsonpath={.status.containerStatuses[?(@.name=="coredns")].restartCount}`)
			n, _ := strconv.Atoi(strings.TrimSpace(out))

			return n
		}

		before := count()
		dc.okIn(t, "-n", c.node, "restart", "-k", c.container)

		waitFor(t, 2*time.Minute, "CoreDNS's restart count to grow and it to be ready", func() error {
			ready, _ := dc.kubectl("-n", "kube-system", "get", "pod", pod, "-o", `jsonpath={.status.containerStatuses[?(@.name=="coredns")].ready}`)
			if n := count(); n <= before || strings.TrimSpace(ready) != "true" {
				return fmt.Errorf("restart count %d (was %d), ready %q", n, before, ready)
			}

			return nil
		})

		if out, code := dc.talosctl("-n", c.node, "restart", "-k", "kube-system/nosuchpod:nothing"); code == 0 || !strings.Contains(out, "not found") {
			t.Errorf("restart of a missing container: exit %d\n%s", code, out)
		}
	})

	t.Run("pcap of eth0, without the API's own traffic, read by tcpdump", func(t *testing.T) {
		filter, err := exec.Command("tcpdump", "-dd", "-y", "EN10MB", "not port 50000").Output()
		if err != nil {
			t.Fatalf("tcpdump -dd: %v", err)
		}

		file := filepath.Join(t.TempDir(), "eth0.pcap")
		dc.okIn(t, "-n", w, "pcap", "-i", "eth0", "--bpf-filter", string(filter), "--duration", "5s", "-o", file)

		all, err := exec.Command("tcpdump", "-n", "-r", file).CombinedOutput()
		if err != nil || strings.Count(string(all), "\n") < 5 {
			t.Fatalf("tcpdump -r: %v: the worker's eth0 carried its kubelet's traffic, want packets:\n%s", err, all)
		}

		api, err := exec.Command("tcpdump", "-n", "-r", file, "port 50000").CombinedOutput()
		if err != nil || strings.Contains(string(api), " IP ") {
			t.Errorf("the filter let the API's traffic through: %v\n%s", err, api)
		}
	})

	t.Run("the day-2 resources", func(t *testing.T) {
		out := dc.okIn(t, "-n", w, "get", "hardwareaddresses")
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(w) + `\s+network\s+HardwareAddress\s+first\s+\d+\s+([0-9a-f]{2}:){5}[0-9a-f]{2}$`).MatchString(out) {
			t.Errorf("get hardwareaddresses:\n%s", out)
		}

		if out := dc.okIn(t, "-n", w, "get", "securitystate"); !strings.Contains(out, "securitystate") || !strings.Contains(out, "false") {
			t.Errorf("get securitystate:\n%s", out)
		}

		if out := dc.okIn(t, "-n", cp, "inspect", "dependencies"); !strings.Contains(out, `"network.HardwareAddrController" -> "HardwareAddresses.net.talos.dev"`) {
			t.Errorf("inspect dependencies lacks networkd's controllers:\n%.2000s", out)
		}

		if out := dc.okIn(t, "-n", cp, "usage", "-d", "1", "/var/lib"); !regexp.MustCompile(`(?m)^\d+\s+\.$`).MatchString(out) {
			t.Errorf("usage /var/lib:\n%s", out)
		}

		// The worker's ApiCertificates hold the server certificate trustd
		// issued it, of machine.ca, for its address; CertSANs names it.
		var api struct {
			Spec struct {
				Server struct{ Crt configs.Base64 } `yaml:"server"`
			} `yaml:"spec"`
		}

		if err := yaml.Unmarshal([]byte(dc.okIn(t, "-n", w, "get", "certs", "-o", "yaml")), &api); err != nil {
			t.Fatal(err)
		}

		cfg, err := configs.Decode([]byte(dc.okIn(t, "-n", cp, "read", "/var/lib/talosbox/state/config.yaml")))
		if err != nil {
			t.Fatal(err)
		}

		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(cfg.Machine.CA.Crt)

		if block, _ := pem.Decode(api.Spec.Server.Crt); block == nil {
			t.Errorf("the worker's ApiCertificates have no server certificate: %q", api.Spec.Server.Crt)
		} else if crt, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Error(err)
		} else if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil || crt.VerifyHostname(w) != nil {
			t.Errorf("the worker's API certificate: %v; names %v", err, crt.IPAddresses)
		}

		if out := dc.okIn(t, "-n", w, "get", "certsans", "-o", "yaml"); !strings.Contains(out, "- "+w+"\n") {
			t.Errorf("the worker's CertSANs lack %s:\n%s", w, out)
		}
	})

	t.Run("support bundle: Talos's files, no secret", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "support.zip")
		out := dc.okIn(t, "-n", cp+","+w, "support", "-O", file, "-w", "4")

		if !strings.Contains(out, "Support bundle is written to "+file) {
			t.Errorf("support:\n%s", out)
		}

		zr, err := zip.OpenReader(file)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()

		files := map[string]string{}

		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}

			b, err := io.ReadAll(rc)
			rc.Close()

			if err != nil {
				t.Fatal(err)
			}

			files[f.Name] = string(b)
		}

		for _, name := range []string{cp + "/dmesg.log", cp + "/service-logs/etcd.log", cp + "/service-logs/kubelet.state", cp + "/etcd-members",
			cp + "/resources/staticpods.kubernetes.talos.dev.yaml", w + "/service-logs/kubelet.log", w + "/kubernetes-containers", w + "/processes",
			"kubernetesResources/nodes.yaml", "kubernetesResources/systemPods.yaml"} {
			if files[name] == "" {
				t.Errorf("the bundle lacks %s (or it is empty)", name)
			}
		}

		if !slices.ContainsFunc(slices.Collect(maps.Keys(files)), func(n string) bool {
			return strings.HasPrefix(n, cp+"/kubernetes-logs/kube-system/kube-apiserver-") && strings.HasSuffix(n, "/kube-apiserver.log")
		}) {
			t.Errorf("the bundle has no kube-apiserver log of %s", cp)
		}

		for _, n := range names {
			if !strings.Contains(files["kubernetesResources/nodes.yaml"], "name: "+n+"\n") {
				t.Errorf("kubernetesResources/nodes.yaml lacks node %s", n)
			}
		}

		cfg, err := configs.Decode([]byte(dc.okIn(t, "-n", cp, "read", "/var/lib/talosbox/state/config.yaml")))
		if err != nil {
			t.Fatal(err)
		}

		secrets := slices.DeleteFunc(render.Secrets(cfg), func(s string) bool { return len(s) < 8 })
		if len(secrets) < 10 {
			t.Fatalf("only %d secrets in the control plane's config", len(secrets))
		}

		for name, data := range files {
			for _, s := range secrets {
				if strings.Contains(data, s) {
					t.Errorf("the bundle's %s holds a secret of the config (%.6s...)", name, s)
				}
			}
		}

		if _, err := os.Stat(file); err != nil {
			t.Fatal(err)
		}
	})
}

// testRotateCA rotates the Talos API CA of the 3+1 cluster while an
// outside client asks the Kubernetes API for /readyz every 100 ms:
// the Kubernetes API never notices. Every node then answers the new
// talosconfig (workers with server certificates trustd issued under the
// new CA), and the old talosconfig is refused everywhere.
func testRotateCA(t *testing.T, dc *dockerCluster, nodes []string) {
	talosconfig := filepath.Join(dc.dir, "talosconfig")

	old, err := os.ReadFile(talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	oldPath := filepath.Join(t.TempDir(), "old-talosconfig")
	if err := os.WriteFile(oldPath, old, 0o600); err != nil {
		t.Fatal(err)
	}

	sampler := availability.Start(100*time.Millisecond, func() (bool, string) {
		out, err := dc.kubectl("get", "--raw", "/readyz", "--request-timeout", "2s")
		if err == nil && strings.TrimSpace(out) == "ok" {
			return true, ""
		}

		return false, availability.LastLine(out)
	})

	start := time.Now()
	out := dc.okIn(t, "-n", strings.Join(nodes, ","), "rotate-ca", "--dry-run=false", "--kubernetes=false")
	took := time.Since(start)

	res := sampler.Report(start, t.Logf)
	t.Logf("rotate-ca of the Talos API CA on %d nodes: %s; Kubernetes API probes: %d, failed %d",
		len(nodes), took.Round(100*time.Millisecond), len(res.Samples), len(res.Outages))

	if len(res.Outages) != 0 {
		t.Errorf("the Kubernetes API failed %d times during the Talos CA rotation (longest %s)", len(res.Outages), res.Longest)
	}

	for _, n := range nodes {
		if !strings.Contains(out, "  - "+n+": OK (version ") {
			t.Errorf("rotate-ca did not verify %s with the new PKI:\n%s", n, out)
		}

		if _, code := dc.talosctl("-n", n, "version"); code != 0 {
			t.Errorf("%s does not answer the new talosconfig", n)
		}

		if o, code := dc.talosctl("--talosconfig", oldPath, "-n", n, "version"); code == 0 {
			t.Errorf("%s still answers the old talosconfig:\n%s", n, o)
		}
	}
}

// testRotateKubernetesCA rotates the Kubernetes API CA (cluster.ca) of
// the 3+1 cluster while an outside client asks the control planes' API
// servers for /readyz every 100 ms with a service account token (signed by the
// service account key, which the rotation leaves alone; TLS unverified,
// as the CA it would verify against is the one changing). Afterwards:
// every node is Ready, each kubelet's client certificate comes from the
// new CA (the kubelets bootstrapped again), a fresh kubeconfig works and
// the old one does not.
func testRotateKubernetesCA(t *testing.T, dc *dockerCluster, nodes []string) {
	dc.kube(t, "-n", "default", "create", "serviceaccount", "rotation-probe")
	token := strings.TrimSpace(dc.kube(t, "-n", "default", "create", "token", "rotation-probe", "--duration", "1h"))

	oldKubeconfig := filepath.Join(t.TempDir(), "old-kubeconfig")
	if err := os.WriteFile(oldKubeconfig, []byte(dc.kube(t, "config", "view", "--minify", "--raw")), 0o600); err != nil {
		t.Fatal(err)
	}

	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // availability, not trust: see above

	// The cluster's API is served while one of its API servers answers:
	// clients in the cluster reach them all through KubePrism, and each
	// API server restarts with every step of the rotation.
	sampler := availability.Start(100*time.Millisecond, func() (bool, string) {
		var why []string

		for _, cp := range nodes[:3] {
			req, err := http.NewRequest(http.MethodGet, "https://"+cp+":6443/readyz", nil)
			if err != nil {
				return false, err.Error()
			}

			req.Header.Set("Authorization", "Bearer "+token)

			resp, err := probe.Do(req)
			if err != nil {
				why = append(why, err.Error())

				continue
			}

			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()

			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
				return true, ""
			}

			why = append(why, fmt.Sprintf("%s: %d %s", cp, resp.StatusCode, availability.LastLine(string(body))))
		}

		return false, strings.Join(why, "; ")
	})

	start := time.Now()
	out := dc.okIn(t, "-n", strings.Join(nodes, ","), "rotate-ca", "--dry-run=false", "--talos=false")
	took := time.Since(start)

	res := sampler.Report(start, t.Logf)
	t.Logf("rotate-ca of the Kubernetes CA on %d nodes: %s; API server probes: %d, failed runs %d (longest %s)",
		len(nodes), took.Round(100*time.Millisecond), len(res.Samples), len(res.Outages), res.Longest)

	if len(res.Outages) != 0 {
		t.Errorf("the API server failed the outside client %d times during the Kubernetes CA rotation (longest %s)", len(res.Outages), res.Longest)
	}

	for _, want := range []string{"> Removing old Kubernetes CA from the accepted CAs...", fmt.Sprintf(" - OK (%d nodes ready)", len(nodes)),
		"  - daemonset/kube-system/kube-proxy: OK", "  - daemonset/kube-system/kube-flannel: OK", "  - deployment/kube-system/coredns: OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate-ca lacks %q:\n%s", want, out)
		}
	}

	// A fresh kubeconfig, of the new CA.
	dc.okIn(t, "-n", nodes[0], "kubeconfig", "--force")

	cfg, err := configs.Decode([]byte(dc.okIn(t, "-n", nodes[0], "read", "/var/lib/talosbox/state/config.yaml")))
	if err != nil {
		t.Fatal(err)
	}

	if len(cfg.Cluster.AcceptedCAs) != 0 {
		t.Errorf("cluster.acceptedCAs still holds %d CAs", len(cfg.Cluster.AcceptedCAs))
	}

	newCA := x509.NewCertPool()
	newCA.AppendCertsFromPEM(cfg.Cluster.CA.Crt)

	waitFor(t, 3*time.Minute, "every node Ready through the new kubeconfig", func() error {
		out, err := dc.kubectl("get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}`)
		if err != nil || strings.Count(out, "True") != len(nodes) {
			return fmt.Errorf("%v: %s", err, out)
		}

		return nil
	})

	// Each kubelet bootstraps again once its old CA is dropped: a moment
	// after rotate-ca returns on a busy node.
	for _, n := range nodes {
		waitFor(t, 3*time.Minute, n+"'s kubelet client certificate of the new CA", func() error {
			pemData, code := dc.talosctl("-n", n, "read", "/var/lib/kubelet/pki/kubelet-client-current.pem")

			block, _ := pem.Decode([]byte(pemData))
			if code != 0 || block == nil {
				return fmt.Errorf("no kubelet client certificate (exit %d): %s", code, pemData)
			}

			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return err
			}

			_, err = cert.Verify(x509.VerifyOptions{Roots: newCA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})

			return err
		})
	}

	// kube-system's pods were replaced while both CAs were trusted, so
	// they talk to the API server still: kube-proxy on every node (the
	// later subtests route new Services through it).
	restarted := dc.kube(t, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy", "-o", "jsonpath={range .items[*]}{.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}{\" \"}{end}")
	if f := strings.Fields(restarted); len(f) != len(nodes) {
		t.Errorf("kube-proxy pods restarted by rotate-ca: %q, want %d", restarted, len(nodes))
	}

	if out, err := dc.kubectl("--kubeconfig", oldKubeconfig, "get", "nodes", "--request-timeout", "5s"); err == nil {
		t.Errorf("the old kubeconfig still works:\n%s", out)
	}
}
