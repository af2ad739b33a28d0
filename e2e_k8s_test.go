//go:build e2e

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/internal/images"
)

// kubectl is the project-built kubectl (make images puts it in _out/bin),
// run against the kubeconfig cluster create merged into the test's HOME.
func (dc *dockerCluster) kubectl(args ...string) (string, error) {
	bin, _ := filepath.Abs(filepath.Join("_out", "bin", "kubectl"))
	cmd := exec.Command(bin, args...)
	cmd.Env = dc.env("KUBECONFIG=" + filepath.Join(dc.dir, ".kube", "config"))

	out, err := cmd.CombinedOutput()

	return string(out), err
}

func (dc *dockerCluster) kube(t *testing.T, args ...string) string {
	t.Helper()

	out, err := dc.kubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	return out
}

// waitFor retries check, every 2s, until it returns nil or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()

	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()

	for {
		err := check()
		if err == nil {
			return
		}

		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}

		<-tick.C
	}
}

// TestDockerKubernetes is the reference Kubernetes cluster in Docker: three control planes and a
// worker in Docker, built from make images, each running the kubelet and
// (control planes) the static-pod control plane.
func TestDockerKubernetes(t *testing.T) {
	bin := buildBinary(t)
	imagesDir := runtimeBuild(t)

	if _, err := os.Stat(filepath.Join("_out", "bin", "kubectl")); err != nil {
		t.Fatalf("no kubectl: %v (run make images)", err)
	}

	// The cluster starts on the previous minor, for upgrade-k8s.
	if index, _ := os.ReadFile(filepath.Join(imagesDir, "oci", "index.json")); !strings.Contains(string(index), images.APIServer(images.KubernetesPrevious).String()) {
		t.Fatalf("no %s in %s (run K8S=all make images)", images.APIServer(images.KubernetesPrevious), imagesDir)
	}

	// Four Kubernetes nodes load two CPUs as a group of QEMU guests does:
	// the guest lock keeps boot/metaltest's clusters (run in parallel by
	// go test) from starving them.
	release, err := qemu.Exclusive()
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(release)

	dc := newDockerCluster(t, bin)

	start := time.Now()
	out := dc.ok("cluster", "create", "--name", dc.name, "--subnet", dc.subnet.String(), "--images-dir", imagesDir,
		"--controlplanes", "3", "--workers", "1", "--memory", "1280", "--memory-workers", "768", "--wait-timeout", "15m",
		"--kubernetes-version", images.KubernetesPrevious, "--use-vip")
	t.Logf("cluster create 3+1 (Kubernetes %s) to healthy: %s", images.KubernetesPrevious, time.Since(start).Round(time.Second))

	for _, want := range []string{"waiting for all k8s nodes to report ready: OK", "waiting for coredns to report ready: OK", "merging kubeconfig", "is healthy",
		"waiting for the shared IP to be held by exactly one control plane node: OK"} {
		if !strings.Contains(out, want) {
			t.Fatalf("create output lacks %q:\n%s", want, out)
		}
	}

	cp1, cp2, cp3, w := dc.ip(0), dc.ip(1), dc.ip(2), dc.ip(3)

	t.Run("the create's timeline", func(t *testing.T) {
		steps := parseTimeline(t, out)
		checkTimeline(t, steps,
			[]string{dc.name + "-controlplane-1", dc.name + "-controlplane-2", dc.name + "-controlplane-3"},
			[]string{dc.name + "-worker-1"})
		t.Logf("timeline: first API server Ready %.1fs, all nodes Ready %.1fs, CoreDNS Ready %.1fs",
			first(steps, "", "kube-apiserver Ready"), last(steps, "", "node Ready"), last(steps, "", "coredns Ready"))
	})

	// Node names by address, from Kubernetes itself.
	names := map[string]string{}

	t.Run("nodes ready with versions and roles", func(t *testing.T) {
		// Ready now: a node's status may lag a moment behind health's
		// check under load (Unknown until its kubelet's next report).
		waitFor(t, 4*time.Minute, "4 nodes Ready with the built version", func() error {
			out, err := dc.kubectl("get", "nodes", "-o", `jsonpath={range .items[*]}{.status.addresses[?(@.type=="InternalIP")].address} {.metadata.name} {.status.nodeInfo.kubeletVersion} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}

			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 4 {
				return fmt.Errorf("want 4 nodes:\n%s", out)
			}

			for _, l := range lines {
				f := strings.Fields(l)
				if len(f) != 4 || f[2] != "v"+images.KubernetesPrevious || f[3] != "True" {
					return fmt.Errorf("node line %q: want version v%s and Ready True", l, images.KubernetesPrevious)
				}

				names[f[0]] = f[1]
			}

			return nil
		})

		roles := strings.Fields(dc.kube(t, "get", "nodes", "-l", "node-role.kubernetes.io/control-plane", "-o", "jsonpath={.items[*].metadata.name}"))
		if len(roles) != 3 || slices.Contains(roles, names[w]) {
			t.Errorf("control-plane nodes %v; the worker is %s", roles, names[w])
		}

		// The OS image is the node's /etc/os-release, as Talos's says Talos (vX).
		for img := range strings.SplitSeq(strings.TrimSuffix(dc.kube(t, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.nodeInfo.osImage}{"|"}{end}`), "|"), "|") {
			if !strings.HasPrefix(img, "talosbox (v") {
				t.Errorf("OS-IMAGE %q, want talosbox (version)", img)
			}
		}

		taints := dc.kube(t, "get", "node", names[cp1], "-o", "jsonpath={.spec.taints[*].key}")
		if !strings.Contains(taints, "node-role.kubernetes.io/control-plane") {
			t.Errorf("control plane taints: %q", taints)
		}
	})

	if len(names) != 4 {
		t.FailNow()
	}

	// Issue 49: the node has the kubelet validate its config, with the
	// binary in the kubelet image it runs, before it applies one.
	t.Run("a kubelet setting the kubelet refuses is refused at apply, in its words", func(t *testing.T) {
		testKubeletValidatesAtApply(t, dc, w)
	})

	t.Run("the pods talosbox deploys share one shim per node", func(t *testing.T) {
		testSystemShimGroup(t, dc, names, cp1, w)
	})

	t.Run("a reader sees no secret of the config in any resource", func(t *testing.T) {
		testReaderSeesNoSecret(t, dc, cp1, cp1, w)
	})

	t.Run("day-2 commands", func(t *testing.T) {
		testDay2OnDocker(t, dc, names, cp1, w)
	})

	t.Run("rotate-ca: the Talos API CA, Kubernetes undisturbed", func(t *testing.T) {
		testRotateCA(t, dc, []string{cp1, cp2, cp3, w})
	})

	// Issue 49: the second control plane moves to Talos 1.14's shape,
	// its Kubernetes settings as documents; the rotation and upgrade-k8s
	// below patch them there.
	t.Run("a control plane on Talos 1.14's Kubernetes documents", func(t *testing.T) {
		testKubernetesDocuments(t, dc, cp2, names[cp2])
	})

	t.Run("rotate-ca: the Kubernetes CA, the API server serving throughout", func(t *testing.T) {
		testRotateKubernetesCA(t, dc, []string{cp1, cp2, cp3, w})
	})

	// Each kubelet reaches the cluster through KubePrism, so that a
	// control plane whose own API server is down still reports its pods
	// (the bad-image case below) and renews its lease.
	t.Run("kubeprism healthy on every node", func(t *testing.T) {
		// Waited for: the Kubernetes CA rotation just before restarted
		// every API server, and a KubePrism health check presents the
		// kubelet's client certificate, which the kubelet renews after the
		// old CA is dropped; until then no upstream accepts it.
		for _, n := range []string{cp1, cp3, w} {
			waitFor(t, 3*time.Minute, n+"'s KubePrism healthy", func() error {
				out, code := dc.talosctl("-n", n, "get", "kubeprismstatuses")
				lines := strings.Split(strings.TrimSpace(out), "\n")

				if f := strings.Fields(lines[len(lines)-1]); code != 0 || len(f) < 2 || f[len(f)-2] != "localhost:7445" || f[len(f)-1] != "true" {
					return fmt.Errorf("get kubeprismstatuses: exit %d\n%s", code, out)
				}

				return nil
			})
		}

		// The worker balances over every control plane, not just the
		// endpoint (cp1): discovery lists them.
		waitFor(t, time.Minute, "the worker's KubePrism lists every control plane", func() error {
			out, code := dc.talosctl("-n", w, "get", "kubeprismendpoints", "-o", "yaml")
			for _, ip := range []string{cp1, cp2, cp3} {
				if code != 0 || !strings.Contains(out, "host: "+ip+"\n") {
					return fmt.Errorf("no %s (exit %d):\n%s", ip, code, out)
				}
			}

			return nil
		})

		// kube-proxy and flannel reach the API server through it too.
		if out := dc.kube(t, "-n", "kube-system", "get", "configmap", "kubeconfig-in-cluster", "-o", "jsonpath={.data.kubeconfig}"); !strings.Contains(out, "server: \"https://127.0.0.1:7445\"") {
			t.Errorf("kubeconfig-in-cluster does not name KubePrism:\n%s", out)
		}
	})

	t.Run("deployment through a service and DNS from another node", func(t *testing.T) {
		dc.kube(t, "create", "deployment", "echo", "--image="+images.EchoImage().String(), "--replicas=2", "--port=8080")
		dc.kube(t, "expose", "deployment", "echo", "--port=80", "--target-port=8080")
		dc.kube(t, "rollout", "status", "deployment/echo", "--timeout=5m")

		ip := strings.TrimSpace(dc.kube(t, "get", "service", "echo", "-o", "jsonpath={.spec.clusterIP}"))

		// Control planes are tainted: the replicas are on the worker, the
		// client on a control plane, so every request crosses nodes.
		for i, url := range []string{"http://" + ip + "/", "http://echo.default.svc.cluster.local/"} {
			pod := fmt.Sprintf("client-%d", i)
			manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"nodeName":%q,"restartPolicy":"Never",
"tolerations":[{"operator":"Exists"}],"containers":[{"name":"c","image":%q,"command":["/echo","get","--timeout","120s",%q]}]}}`,
				pod, names[cp2], images.EchoImage().String(), url)

			f := filepath.Join(dc.dir, pod+".json")
			if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}

			dc.kube(t, "apply", "-f", f)
			dc.kube(t, "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/"+pod, "--timeout=3m")

			waitFor(t, 2*time.Minute, "the client's log", func() error {
				out, err := dc.kubectl("logs", pod)
				if err != nil {
					return fmt.Errorf("%v: %s", err, out)
				}

				// The client retries (on stderr, which logs merge) while
				// kube-proxy on its node has yet to route the new Service;
				// its answer is its last line.
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if got := lines[len(lines)-1]; !strings.HasPrefix(got, "echo-") {
					t.Errorf("%s answered %q, want an echo pod's name", url, out)
				} else if len(lines) > 1 {
					t.Logf("%s answered %s after %d retries", url, got, len(lines)-1)
				}

				return nil
			})
		}

		hosts := dc.kube(t, "get", "pods", "-l", "app=echo", "-o", "jsonpath={.items[*].spec.nodeName}")
		if strings.Contains(hosts, names[cp2]) {
			t.Errorf("an echo replica runs on the client's node %s: %s", names[cp2], hosts)
		}
	})

	testHostPort(t, dc, names[w], w)
	testClusterLoad(t, dc, imagesDir, names[w], w, 4)

	// Issue 19: upgrade-k8s to the default version under load, rollback
	// by config, try mode, convert-k8s. What follows runs on the result.
	testUpgradeUnderLoad(t, dc, names, []string{cp1, cp2, cp3}, w)

	t.Run("seed troubleshooting commands", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"-n", cp1, "service", "kubelet"}, []string{"kubelet", "Running", "OK"}},
			{[]string{"-n", cp1, "logs", "kubelet"}, []string{"kubelet"}},
			{[]string{"-n", cp1, "get", "staticpods"}, []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}},
			{[]string{"-n", cp1, "get", "staticpodstatus"}, []string{"kube-system/kube-apiserver-" + names[cp1], "True"}},
			{[]string{"-n", cp1, "get", "manifests"}, []string{"00-kubelet-bootstrapping-token", "11-core-dns", "05-flannel"}},
			{[]string{"-n", cp1, "get", "bootstrapstatus"}, []string{"control-plane"}},
			{[]string{"-n", cp1, "ls", "/etc/kubernetes/manifests"}, []string{cp1}},
			{[]string{"-n", cp1, "logs", "-k", "kube-system/kube-apiserver-" + names[cp1] + ":kube-apiserver"}, []string{"Version: v" + images.Kubernetes}},
			{[]string{"-n", cp1, "containers", "-k"}, []string{"kube-system/kube-apiserver-" + names[cp1] + ":kube-apiserver", images.APIServer(images.Kubernetes).String()}},
			{[]string{"-n", w, "service", "kubelet"}, []string{"Running"}},
		} {
			out := dc.ok(c.args...)
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("talosctl %s lacks %q:\n%s", strings.Join(c.args, " "), want, out)
				}
			}
		}

		kc := filepath.Join(dc.dir, "kubeconfig-cp1")
		dc.ok("-n", cp1, "kubeconfig", kc)

		if st, err := os.Stat(kc); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("talosctl kubeconfig wrote %v, %v", st, err)
		}
	})

	// The default version now, which is e2e.test's.
	testConformanceSubset(t, dc, cp1, []string{cp1, cp2, cp3, w})

	t.Run("static pods carry Talos's annotations", func(t *testing.T) {
		out := dc.ok("-n", cp1, "get", "staticpods", "-o", "yaml")
		for _, want := range []string{"talos.dev/config-version:", "talos.dev/secrets-version:", "talos.dev/config-file-version:"} {
			if !strings.Contains(out, want) {
				t.Errorf("get staticpods -o yaml lacks %s", want)
			}
		}
	})

	t.Run("denied extraArg refused at apply", func(t *testing.T) {
		out := dc.fails("-n", cp1, "patch", "mc", "--immediate", "-p", `[{"op":"add","path":"/cluster/apiServer/extraArgs","value":{"etcd-servers":"http://example.com:2379"}}]`)
		if !strings.Contains(out, "cluster.apiServer.extraArgs") || !strings.Contains(out, "etcd-servers") {
			t.Errorf("no clear refusal:\n%s", out)
		}
	})

	t.Run("extraArgs change restarts the apiserver with the flag", func(t *testing.T) {
		before := annotation(t, dc.ok("-n", cp1, "get", "staticpods", "kube-apiserver", "-o", "yaml"), "talos.dev/config-version")

		dc.ok("-n", cp1, "patch", "mc", "--immediate", "-p", `[{"op":"add","path":"/cluster/apiServer/extraArgs","value":{"event-ttl":"2h0m0s"}}]`)

		after := annotation(t, dc.ok("-n", cp1, "get", "staticpods", "kube-apiserver", "-o", "yaml"), "talos.dev/config-version")
		if after == before {
			t.Errorf("config-version stayed %s", before)
		}

		waitFor(t, 8*time.Minute, "the apiserver's mirror pod has --event-ttl", func() error {
			out, err := dc.kubectl("-n", "kube-system", "get", "pod", "kube-apiserver-"+names[cp1], "-o", "jsonpath={.spec.containers[0].command} {.status.containerStatuses[0].ready}")
			if err != nil || !strings.Contains(out, "--event-ttl=2h0m0s") || !strings.HasSuffix(out, "true") {
				return fmt.Errorf("%v: %s", err, out)
			}

			return nil
		})
	})

	t.Run("a killed apiserver comes back", func(t *testing.T) {
		restarts := func() int {
			out, _ := dc.kubectl("-n", "kube-system", "get", "pod", "kube-apiserver-"+names[cp2], "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
			n, _ := strconv.Atoi(strings.TrimSpace(out))

			return n
		}

		before := restarts()
		killInNode(t, dc, dc.name+"-controlplane-2", "kube-apiserver")

		waitFor(t, 8*time.Minute, "the apiserver restarted and ready", func() error {
			out, err := dc.kubectl("-n", "kube-system", "get", "pod", "kube-apiserver-"+names[cp2], "-o", "jsonpath={.status.containerStatuses[0].ready}")
			if n := restarts(); err != nil || n <= before || out != "true" {
				return fmt.Errorf("restarts %d (was %d), ready %q, %v", n, before, out, err)
			}

			return nil
		})
	})

	t.Run("a bad apiserver image is reported, and fixing it recovers", func(t *testing.T) {
		bad := "registry.k8s.io/kube-apiserver:v1.34.99-missing"
		good := images.APIServer(images.Kubernetes).String()

		patched := time.Now()

		// What the kubelet did with the pod from the patch on, when it was
		// not reported (CI shows the start of a failed test's output: keep
		// it short), and what machined served it.
		defer func() {
			if t.Failed() {
				served, _ := dc.talosctl("-n", cp3, "get", "staticpods", "kube-apiserver", "-o", "yaml")
				t.Logf("served on %s: %s", cp3, grepLines(served, "image:", "config-version"))

				out, _ := dc.talosctl("-n", cp3, "logs", "kubelet", "--tail", "2000")
				t.Logf("kubelet on %s after the patch:\n%s", cp3, kubeletSince(out, patched.Add(-5*time.Second), 40))

				out, _ = dc.talosctl("-n", cp3, "logs", "controller-runtime", "--tail", "2000")
				t.Logf("polls of the kubelet's pods on %s: %s", cp3, grepLines(out, "kubelet pods"))
			}
		}()

		dc.ok("-n", cp3, "patch", "mc", "--immediate", "-p", `[{"op":"replace","path":"/cluster/apiServer/image","value":"`+bad+`"}]`)

		waitFor(t, 6*time.Minute, "StaticPodStatus says why", func() error {
			out, _ := dc.talosctl("-n", cp3, "get", "staticpodstatus", "kube-system/kube-apiserver-"+names[cp3], "-o", "yaml")
			if !strings.Contains(out, "ImagePull") && !strings.Contains(out, "ErrImage") {
				return fmt.Errorf("no image pull error %s after the patch:\n%s", time.Since(patched).Round(time.Second), out)
			}

			return nil
		})
		t.Logf("the kubelet reported the pull error %s after the patch", time.Since(patched).Round(time.Second))

		// The mirror pod follows the kubelet's status a moment later.
		waitFor(t, 6*time.Minute, "health fails, naming the apiserver", func() error {
			out, code := dc.talosctl("-n", cp3, "health", "--control-plane-nodes", cp1+","+cp2+","+cp3, "--worker-nodes", w, "--wait-timeout", "10s")
			if code == 0 || !strings.Contains(out, "kube-apiserver") {
				return fmt.Errorf("exit %d:\n%s", code, out)
			}

			return nil
		})

		dc.ok("-n", cp3, "patch", "mc", "--immediate", "-p", `[{"op":"replace","path":"/cluster/apiServer/image","value":"`+good+`"}]`)
		dc.ok("-n", cp1, "health", "--control-plane-nodes", cp1+","+cp2+","+cp3, "--worker-nodes", w, "--wait-timeout", "5m")
	})

	t.Run("a rebooted control plane comes back Ready", func(t *testing.T) {
		victim := dc.name + "-controlplane-2"
		ctx := context.Background()

		if _, err := dc.docker.ContainerRestart(ctx, victim, client.ContainerRestartOptions{}); err != nil {
			t.Fatal(err)
		}

		dc.ok("-n", cp1, "health", "--control-plane-nodes", cp1+","+cp2+","+cp3, "--worker-nodes", w, "--wait-timeout", "8m")

		out := dc.kube(t, "get", "node", names[cp2], "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if out != "True" {
			t.Errorf("%s Ready = %q", names[cp2], out)
		}
	})

	t.Run("a missing kubelet image is reported, and fixing it recovers", func(t *testing.T) {
		bad := "ghcr.io/siderolabs/kubelet:v1.34.99-missing"
		good := images.Kubelet(images.Kubernetes).String()

		dc.ok("-n", w, "patch", "mc", "--immediate", "-p", `[{"op":"replace","path":"/machine/kubelet/image","value":"`+bad+`"}]`)

		waitFor(t, 6*time.Minute, "service kubelet names the missing image", func() error {
			out, _ := dc.talosctl("-n", w, "service", "kubelet")
			if !strings.Contains(out, bad) || !strings.Contains(out, "not found") {
				return fmt.Errorf("service kubelet:\n%s", out)
			}

			return nil
		})

		dc.ok("-n", w, "patch", "mc", "--immediate", "-p", `[{"op":"replace","path":"/machine/kubelet/image","value":"`+good+`"}]`)

		waitFor(t, 6*time.Minute, "the kubelet healthy again", func() error {
			out, _ := dc.talosctl("-n", w, "service", "kubelet")
			if !regexpLine(out, `^HEALTH\s+OK$`) || !regexpLine(out, `^STATE\s+Running$`) {
				return fmt.Errorf("service kubelet:\n%s", out)
			}

			return nil
		})
	})

	t.Run("an EPHEMERAL wipe takes the worker's pods, images and certificate, and it rejoins with fresh ones", func(t *testing.T) {
		testEphemeralWipe(t, dc, w, names[w])
	})

	// Issue 31: the first control plane, which cluster create made the
	// endpoint before --use-vip, reset and given its config back.
	t.Run("the first control plane reset rejoins while the cluster serves through the shared IP", func(t *testing.T) {
		testEndpointLoss(t, dc, names, cp1, cp2, w)
	})

	t.Run("a reset control plane leaves etcd and its node can be deleted", func(t *testing.T) {
		dc.ok("-n", cp3, "reset", "--graceful", "--reboot=false")
		testResetLeavesNothingRunning(t, dc, cp3)

		waitFor(t, 6*time.Minute, "etcd members without "+cp3, func() error {
			out, err := dc.talosctl("-n", cp1, "etcd", "members")
			if err != 0 || strings.Contains(out, cp3) {
				return fmt.Errorf("members:\n%s", out)
			}

			return nil
		})

		// A graceful reset cordons and drains first, as in Talos.
		if out := dc.kube(t, "get", "node", names[cp3], "-o", `jsonpath={.spec.unschedulable} {.metadata.annotations.talos\.dev/cordoned}`); out != "true true" {
			t.Errorf("node %s after a graceful reset: unschedulable, talos.dev/cordoned = %q, want cordoned by Talos", names[cp3], out)
		}

		dc.kube(t, "delete", "node", names[cp3])

		if out := dc.kube(t, "get", "nodes", "-o", "name"); strings.Contains(out, names[cp3]) {
			t.Errorf("node %s still listed:\n%s", names[cp3], out)
		}
	})

	dc.ok("cluster", "destroy", "--name", dc.name)
}

// annotation reads one annotation's value from talosctl's YAML output.
func annotation(t *testing.T, yaml, key string) string {
	t.Helper()

	for _, line := range strings.Split(yaml, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}

	t.Fatalf("no %s in:\n%s", key, yaml)

	return ""
}

// kubeletSince keeps the kubelet's log lines (talosctl logs, klog's JSON)
// stamped at or after since about the API server's pod or the kubelet's
// own sync loop, without the per-second retries against a down API
// server, at most limit of them: the story of the pod's replacement.
func kubeletSince(out string, since time.Time, limit int) string {
	about := []string{"kube-apiserver", "Skipping pod synchronization", "PLEG", "from URL", "runtime"}
	noise := []string{"status_manager.go", "mirror_client.go", "kubelet.go:3216", "lease/controller.go", "record/event.go", "MountVolume"}
	has := func(line string, subs []string) bool {
		return slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(line, s) })
	}

	var kept []string

	for line := range strings.Lines(out) {
		m := kubeletTS.FindStringSubmatch(line)
		if m == nil || !has(line, about) || has(line, noise) {
			continue
		}

		if ms, _ := strconv.ParseFloat(m[1], 64); time.UnixMilli(int64(ms)).Before(since) {
			continue
		}

		if len(line) > 400 {
			line = line[:400] + "...\n"
		}

		if kept = append(kept, line); len(kept) == limit {
			break
		}
	}

	return strings.Join(kept, "")
}

var kubeletTS = regexp.MustCompile(`"ts":([0-9.]+)`)

// grepLines keeps the lines of out holding any of subs.
func grepLines(out string, subs ...string) string {
	var kept []string

	for line := range strings.Lines(out) {
		if slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(line, s) }) {
			kept = append(kept, strings.TrimSpace(line))
		}
	}

	return strings.Join(kept, "; ")
}
