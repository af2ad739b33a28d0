//go:build e2e

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/images"
)

// The Kubernetes lifecycle runs on TestDockerKubernetes's
// cluster, which starts on the previous minor: upgrade-k8s under load,
// a rollback by config, a try-mode apply that reverts, convert-k8s.

// upgradeStep is a line of upgrade-k8s's output and when it came.
type upgradeStep struct {
	at   time.Time
	line string
}

// runUpgrade runs talosctl upgrade-k8s, timestamping each output line.
func (dc *dockerCluster) runUpgrade(t *testing.T, args ...string) ([]upgradeStep, string) {
	t.Helper()

	cmd := exec.Command(dc.bin, append([]string{"talosctl", "upgrade-k8s"}, args...)...)
	cmd.Env = dc.env()

	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var (
		lines []upgradeStep
		all   strings.Builder
		done  = make(chan struct{})
	)

	go func() {
		defer close(done)

		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines = append(lines, upgradeStep{time.Now(), sc.Text()})
			// Not logged line by line: a failing run's output is all CI
			// shows of it, and 150 progress lines hide the failure.
			all.WriteString(sc.Text() + "\n")
		}
	}()

	err := cmd.Wait()
	pw.Close()
	<-done

	if err != nil {
		t.Fatalf("talosctl upgrade-k8s %s: %v\n%s", strings.Join(args, " "), err, all.String())
	}

	return lines, all.String()
}

// nodeConfigs reads every node's machine config file.
func (dc *dockerCluster) nodeConfigs(nodes []string) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		out[n] = dc.ok("-n", n, "read", "/system/state/config.yaml")
	}

	return out
}

// testUpgradeUnderLoad is the upgrade under load: from the previous minor to
// the default, with a client on the worker requesting the echo Service
// the whole time.
func testUpgradeUnderLoad(t *testing.T, dc *dockerCluster, names map[string]string, cps []string, w string) {
	from, to := images.KubernetesPrevious, images.Kubernetes
	all := append(append([]string{}, cps...), w)

	t.Run("convert-k8s on a cluster without a self-hosted control plane", func(t *testing.T) {
		out := dc.ok("-n", cps[0], "convert-k8s")
		if !strings.Contains(out, "current self-hosted status: false") || strings.Contains(out, "deleting") {
			t.Errorf("convert-k8s:\n%s", out)
		}
	})

	// The client: a pod on the worker, requesting the Service's ClusterIP
	// every 100 ms.
	ip := strings.TrimSpace(dc.kube(t, "get", "service", "echo", "-o", "jsonpath={.spec.clusterIP}"))
	manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"load"},"spec":{"nodeName":%q,
"containers":[{"name":"c","image":%q,"command":["/echo","load","http://%s/"]}]}}`, names[w], images.EchoImage().String(), ip)

	f := filepath.Join(dc.dir, "load.json")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}

	dc.kube(t, "apply", "-f", f)
	dc.kube(t, "wait", "--for=condition=Ready", "pod/load", "--timeout=3m")

	t.Run("a replaced kube-proxy keeps the Service routed", func(t *testing.T) {
		testKubeProxyReplaced(t, dc, names[w], ip)
	})

	t.Run("dry run changes nothing", func(t *testing.T) {
		before := dc.nodeConfigs(all)
		podsBefore := dc.kube(t, "-n", "kube-system", "get", "pods", "-l", "tier=control-plane", "-o", "jsonpath={.items[*].metadata.annotations.talos\\.dev/config-version}")

		_, out := dc.runUpgrade(t, "-n", cps[0], "--to", to, "--dry-run")
		for _, want := range []string{"automatically detected the lowest Kubernetes version " + from, "discovered controlplane nodes", "> skipped in dry-run", `updating "kube-apiserver" to version "` + to + `"`} {
			if !strings.Contains(out, want) {
				t.Errorf("dry run output lacks %q", want)
			}
		}

		after := dc.nodeConfigs(all)
		for _, n := range all {
			if before[n] != after[n] {
				t.Errorf("the dry run changed %s's config", n)
			}
		}

		if podsAfter := dc.kube(t, "-n", "kube-system", "get", "pods", "-l", "tier=control-plane", "-o", "jsonpath={.items[*].metadata.annotations.talos\\.dev/config-version}"); podsAfter != podsBefore {
			t.Errorf("static pods' config versions %q -> %q", podsBefore, podsAfter)
		}
	})

	probe := startAPIServerProbe(t, filepath.Join(dc.dir, ".kube", "config"), cps)

	start := time.Now()
	steps, out := dc.runUpgrade(t, "-n", cps[0], "--to", to)
	took := time.Since(start)
	windows := probe.windows()

	t.Logf("upgrade-k8s %s -> %s, 3+1, under load: %s", from, to, took.Round(time.Second))

	for _, cp := range cps {
		t.Logf("kube-apiserver on %s: longest unavailability seen by a client: %s", cp, windows[cp].Round(10*time.Millisecond))
	}

	t.Run("upgrade output follows Talos's", func(t *testing.T) {
		for _, want := range []string{
			`updating "kube-apiserver" to version "` + to + `"`,
			`updating "kube-controller-manager" to version "` + to + `"`,
			`updating "kube-scheduler" to version "` + to + `"`,
			fmt.Sprintf(` > update kube-apiserver: v%s -> %s`, from, to),
			fmt.Sprintf(` > %q: machine configuration patched`, cps[1]),
			fmt.Sprintf(` > %q: waiting for kube-apiserver pod update`, cps[2]),
			fmt.Sprintf(` < %q: successfully updated`, cps[0]),
			`updating kube-proxy to version "` + to + `"`,
			`updating kubelet to version "` + to + `"`,
			fmt.Sprintf(` > %q: waiting for node update`, w),
			"updating manifests",
			" > waiting for apps/v1/DaemonSet/kube-system/kube-proxy",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("upgrade output lacks %q", want)
			}
		}
	})

	t.Run("every node and component reports the new version", func(t *testing.T) {
		waitFor(t, 4*time.Minute, "nodes on "+to, func() error {
			out, err := dc.kubectl("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.kubeletVersion}")
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}

			if vs := strings.Fields(out); len(vs) != 4 || slices.ContainsFunc(vs, func(v string) bool { return v != "v"+to }) {
				return fmt.Errorf("kubelet versions %q", out)
			}

			return nil
		})

		// Mirror pods come and go while the kubelets restart on their new
		// version (a kubelet recreates the mirror of a static pod whose hash
		// its version computes differently): wait for all nine.
		var imgs []string

		waitFor(t, 2*time.Minute, "the control plane's mirror pods on "+to, func() error {
			out, err := dc.kubectl("-n", "kube-system", "get", "pods", "-l", "tier=control-plane", "-o", "jsonpath={.items[*].spec.containers[*].image}")
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}

			imgs = strings.Fields(out)
			for _, c := range []string{images.APIServer(to).String(), images.ControllerManager(to).String(), images.Scheduler(to).String()} {
				if n := countOf(imgs, c); n < 3 {
					return fmt.Errorf("%d control-plane pods run %s: %v", n, c, imgs)
				}
			}

			return nil
		})

		for _, img := range imgs {
			if strings.Contains(img, from) {
				t.Errorf("a control-plane pod still runs %s", img)
			}
		}

		if got := dc.kube(t, "-n", "kube-system", "get", "daemonset", "kube-proxy", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != images.Proxy(to).String() {
			t.Errorf("kube-proxy image %s", got)
		}

		for _, cp := range cps {
			if v := probe.serverVersion(cp); v != "v"+to {
				t.Errorf("%s's API server is %s", cp, v)
			}
		}
	})

	t.Run("the Service answered through every step", func(t *testing.T) {
		// Two more tallies after the upgrade, so the last step has one.
		end := time.Now()

		var log string

		waitFor(t, 2*time.Minute, "a tally after the upgrade", func() error {
			log, _ = dc.kubectl("logs", "load")
			tallies, _ := parseLoadLog(log)

			if len(tallies) == 0 || !tallies[len(tallies)-1].at.After(end.Add(3*time.Second)) {
				return fmt.Errorf("no tally after %s", end)
			}

			return nil
		})

		tallies, failures := parseLoadLog(log)
		last := tallies[len(tallies)-1]
		t.Logf("load during the upgrade: %d requests answered, %d failed", last.ok, last.failed)

		for _, f := range failures {
			t.Logf("  %s", f)
		}

		for _, s := range steps {
			if strings.HasPrefix(s.line, "updating ") && !answeredAfter(tallies, s.at) {
				t.Errorf("the Service did not answer after step %q (%s)", s.line, s.at.UTC().Format(time.RFC3339))
			}
		}

		if !answeredAfter(tallies, end) {
			t.Error("the Service did not answer after the upgrade")
		}
	})

	dc.kube(t, "delete", "pod", "load", "--wait=false")

	t.Run("a second run finds everything done", func(t *testing.T) {
		// What an interrupted run does when started again: each step
		// checks the node first and skips what is at the target.
		_, out := dc.runUpgrade(t, "-n", cps[0], "--to", to, "--pre-pull-images=false")
		for _, want := range []string{fmt.Sprintf(` > %q: kube-scheduler is already at %s`, cps[2], images.Scheduler(to)),
			fmt.Sprintf(` > %q: kubelet is already at %s`, w, images.Kubelet(to)), "updating manifests"} {
			if !strings.Contains(out, want) {
				t.Errorf("second run lacks %q", want)
			}
		}

		if strings.Contains(out, "machine configuration patched") {
			t.Error("the second run patched a config")
		}
	})

	t.Run("rollback by config brings the previous apiserver back", func(t *testing.T) {
		cp := cps[0]
		pod := "kube-apiserver-" + names[cp]

		for _, v := range []string{from, to} {
			start := time.Now()
			dc.ok("-n", cp, "patch", "mc", "--immediate", "-p", `[{"op":"replace","path":"/cluster/apiServer/image","value":"`+images.APIServer(v).String()+`"}]`)

			waitFor(t, 8*time.Minute, cp+"'s API server on "+v, func() error {
				if got := probe.serverVersion(cp); got != "v"+v {
					return fmt.Errorf("version %s", got)
				}

				return nil
			})

			t.Logf("patch mc of kube-apiserver's image to %s: the new API server served after %s", v, time.Since(start).Round(100*time.Millisecond))

			// Seed 001's manual flow: the config's version, then the pod's.
			version := annotation(t, dc.ok("-n", cp, "get", "kcpc", "kube-apiserver", "-o", "yaml"), "version")

			waitFor(t, 6*time.Minute, "the pod's config-version "+version, func() error {
				out, err := dc.kubectl("get", "pod", "-n", "kube-system", "-l", "k8s-app=kube-apiserver", "--field-selector", "spec.nodeName="+names[cp],
					"-o", `jsonpath={.items[0].metadata.annotations.talos\.dev/config\-version}`)
				if err != nil || out != version {
					return fmt.Errorf("%v: %q", err, out)
				}

				return nil
			})

			waitFor(t, 6*time.Minute, "the mirror pod re-rendered on "+v, func() error {
				out, err := dc.kubectl("-n", "kube-system", "get", "pod", pod, "-o", "jsonpath={.spec.containers[0].image} {.status.containerStatuses[0].ready}")
				if err != nil || out != images.APIServer(v).String()+" true" {
					return fmt.Errorf("%v: %s", err, out)
				}

				return nil
			})
		}
	})

	t.Run("a try-mode apply of a broken control plane reverts", func(t *testing.T) {
		cp := cps[1]
		good := images.APIServer(to).String()
		bad := "registry.k8s.io/kube-apiserver:v1.34.99-missing"

		cfg := dc.ok("-n", cp, "read", "/system/state/config.yaml")
		if !strings.Contains(cfg, good) {
			t.Fatalf("%s's config has no %s", cp, good)
		}

		f := filepath.Join(dc.dir, "broken.yaml")
		if err := os.WriteFile(f, []byte(strings.Replace(cfg, good, bad, 1)), 0o600); err != nil {
			t.Fatal(err)
		}

		dc.ok("-n", cp, "apply-config", "--file", f, "--mode", "try", "--timeout", "1m")

		staticImage := func() string {
			out, _ := dc.talosctl("-n", cp, "get", "staticpods", "kube-apiserver", "-o", "yaml")
			return out
		}

		if !strings.Contains(staticImage(), bad) {
			t.Errorf("the tried config did not reach the static pod")
		}

		waitFor(t, 7*time.Minute, "the try timed out and the config reverted", func() error {
			if out := staticImage(); !strings.Contains(out, good) || strings.Contains(out, bad) {
				return fmt.Errorf("static pod still tried: %s", bad)
			}

			return nil
		})

		dc.ok("-n", cps[0], "health", "--control-plane-nodes", strings.Join(cps, ","), "--worker-nodes", w, "--wait-timeout", "5m")

		waitFor(t, 6*time.Minute, cp+"'s API server on "+to+" after the revert", func() error {
			if v := probe.serverVersion(cp); v != "v"+to {
				return fmt.Errorf("version %s", v)
			}

			return nil
		})
	})

	t.Run("convert-k8s hands a self-hosted control plane to the static pods", func(t *testing.T) {
		testConvertK8s(t, dc, cps, w)
	})
}

func countOf(ss []string, s string) int {
	n := 0

	for _, x := range ss {
		if x == s {
			n++
		}
	}

	return n
}
