package k8s

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// generated is a real control-plane and worker config from gen config.
func generated(t *testing.T) (cp, worker *configs.Config) {
	t.Helper()

	out, err := generate.Generate(generate.Options{ClusterName: "test", Endpoint: "https://10.5.0.2:6443", KubernetesVersion: "1.34.12"})
	if err != nil {
		t.Fatal(err)
	}

	return out.ControlPlane, out.Worker
}

func command(t *testing.T, pod map[string]any) []string {
	t.Helper()

	c := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["command"].([]any)
	out := make([]string, len(c))

	for i, a := range c {
		out[i] = a.(string)
	}

	return out
}

func TestStaticPods(t *testing.T) {
	cp, _ := generated(t)

	cp.Cluster.APIServer.ExtraArgs = configs.ArgsOf(map[string]string{"enable-admission-plugins": "AlwaysPullImages,NodeRestriction", "v": "2"})
	cp.Cluster.APIServer.Env = map[string]string{"B": "x$y", "A": "1"}

	specs, err := render.ComponentConfigs(cp)
	if err != nil {
		t.Fatal(err)
	}

	pod, err := render.StaticPodFor(k8s.APIServerID, specs[k8s.APIServerID], render.PodVersions{Secrets: "s1", Config: "3", ConfigFile: "f2"})
	if err != nil {
		t.Fatal(err)
	}

	args := command(t, pod)
	if args[0] != "/usr/local/bin/kube-apiserver" {
		t.Fatalf("command %q", args[0])
	}

	if !slices.IsSorted(args[1:]) {
		t.Errorf("args are not sorted by key: %q", args)
	}

	for _, want := range []string{
		"--enable-admission-plugins=NodeRestriction,AlwaysPullImages", // additive: the default first, no duplicate
		"--v=2",
		"--etcd-servers=https://127.0.0.1:2379",
		"--secure-port=6443",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--tls-cert-file=/system/secrets/kubernetes/kube-apiserver/apiserver.crt",
		"--authorization-config=/system/config/kubernetes/kube-apiserver/authorization-config.yaml",
		"--api-audiences=https://10.5.0.2:6443",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("missing %s in %q", want, args)
		}
	}

	md := pod["metadata"].(map[string]any)
	ann := md["annotations"].(map[string]any)

	// Talos's versions, and the node's system shim group: one runc shim
	// for every pod talosbox renders.
	if ann["talos.dev/secrets-version"] != "s1" || ann["talos.dev/config-version"] != "3" || ann["talos.dev/config-file-version"] != "f2" ||
		ann[constants.ShimGroupAnnotation] != constants.SystemShimGroup {
		t.Errorf("annotations %v", ann)
	}

	if md["labels"].(map[string]any)["app.kubernetes.io/version"] != "1.34.12" {
		t.Errorf("labels %v", md["labels"])
	}

	env := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"].([]any)
	if len(env) != 3 || env[1].(map[string]any)["name"] != "A" || env[2].(map[string]any)["value"] != "x$$y" {
		t.Errorf("env: POD_IP, then sorted with $ escaped: %v", env)
	}

	cm, err := render.StaticPodFor(k8s.ControllerManagerID, specs[k8s.ControllerManagerID], render.PodVersions{})
	if err != nil {
		t.Fatal(err)
	}

	if args := command(t, cm); args[1] != "--use-service-account-credentials" || !slices.Contains(args, "--cluster-cidr=10.244.0.0/16") {
		t.Errorf("controller-manager args %q", args)
	}

	if _, ok := cm["metadata"].(map[string]any)["annotations"].(map[string]any)["talos.dev/config-file-version"]; ok {
		t.Error("only the apiserver carries config-file-version")
	}
}

func TestStaticPodDeniedArgs(t *testing.T) {
	cp, _ := generated(t)

	for _, tc := range []struct {
		id   string
		set  func(map[string]string)
		path string
	}{
		{k8s.APIServerID, func(m map[string]string) { cp.Cluster.APIServer.ExtraArgs = configs.ArgsOf(m) }, "cluster.apiServer.extraArgs"},
		{k8s.ControllerManagerID, func(m map[string]string) { cp.Cluster.ControllerManager.ExtraArgs = configs.ArgsOf(m) }, "cluster.controllerManager.extraArgs"},
		{k8s.SchedulerID, func(m map[string]string) { cp.Cluster.Scheduler.ExtraArgs = configs.ArgsOf(m) }, "cluster.scheduler.extraArgs"},
	} {
		denied := configs.DeniedExtraArgs[tc.path][0]
		tc.set(map[string]string{denied: "x"})

		specs, err := render.ComponentConfigs(cp)
		if err != nil {
			t.Fatal(err)
		}

		_, err = render.StaticPodFor(tc.id, specs[tc.id], render.PodVersions{})
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), denied) {
			t.Errorf("%s: %s: got %v", tc.id, denied, err)
		}

		// Validation refuses the same config before it is applied.
		if _, verr := cp.Validate(configs.ModeContainer); verr == nil || !strings.Contains(verr.Error(), fmt.Sprintf("%s[%q]", tc.path, denied)) {
			t.Errorf("validation of %s[%q]: %v", tc.path, denied, verr)
		}

		tc.set(nil)
	}
}

func TestComponentsDisabled(t *testing.T) {
	cp, _ := generated(t)
	cp.Machine.ControlPlane = &configs.MachineControlPlaneConfig{Scheduler: &configs.DisabledToggle{Disabled: true}}
	cp.Cluster.APIServer.Image = "registry.k8s.io/kube-apiserver:v1.33.13"

	specs, err := render.ComponentConfigs(cp)
	if err != nil {
		t.Fatal(err)
	}

	if specs[k8s.SchedulerID].Enabled || !specs[k8s.ControllerManagerID].Enabled {
		t.Errorf("enabled: scheduler %v, controller-manager %v", specs[k8s.SchedulerID].Enabled, specs[k8s.ControllerManagerID].Enabled)
	}

	if specs[k8s.APIServerID].Image != "registry.k8s.io/kube-apiserver:v1.33.13" {
		t.Errorf("image %s", specs[k8s.APIServerID].Image)
	}
}

func TestConfigFiles(t *testing.T) {
	cp, _ := generated(t)

	files, err := render.ConfigFiles(cp)
	if err != nil {
		t.Fatal(err)
	}

	byPath := map[string]string{}
	for _, f := range files {
		byPath[f.Path] = string(f.Data)
	}

	if s := byPath["/system/config/kubernetes/kube-apiserver/admission-control-config.yaml"]; !strings.Contains(s, "PodSecurity") {
		t.Errorf("admission config: %s", s)
	}

	if s := byPath["/system/config/kubernetes/kube-scheduler/scheduler-config.yaml"]; !strings.Contains(s, "kubeconfig: /system/secrets/kubernetes/kube-scheduler/kubeconfig") {
		t.Errorf("scheduler config: %s", s)
	}

	v1 := render.FilesVersion(files)

	cp.Cluster.APIServer.AuditPolicy = configs.Unstructured{"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []any{map[string]any{"level": "None"}}}

	files2, err := render.ConfigFiles(cp)
	if err != nil {
		t.Fatal(err)
	}

	if v2 := render.FilesVersion(files2); v2 == v1 || render.FilesVersion(files) != v1 {
		t.Errorf("versions: %s then %s", v1, v2)
	}
}

// TestStaticPodProbes: the apiserver has no probes (as in Talos); the
// controller-manager and the scheduler are probed on their secure ports,
// and their startup probe allows a slow (emulated) node two minutes with
// the liveness probe's timeout.
func TestStaticPodProbes(t *testing.T) {
	cp, _ := generated(t)

	specs, err := render.ComponentConfigs(cp)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		id   string
		port int
		path string
	}{
		{k8s.APIServerID, 0, ""},
		{k8s.ControllerManagerID, 10257, "/healthz"},
		{k8s.SchedulerID, 10259, "/livez"},
	} {
		pod, err := render.StaticPodFor(tc.id, specs[tc.id], render.PodVersions{})
		if err != nil {
			t.Fatal(err)
		}

		c := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)

		if tc.port == 0 {
			if c["startupProbe"] != nil || c["livenessProbe"] != nil {
				t.Errorf("%s has probes: %v %v", tc.id, c["startupProbe"], c["livenessProbe"])
			}

			continue
		}

		startup, _ := c["startupProbe"].(map[string]any)
		liveness, _ := c["livenessProbe"].(map[string]any)

		if startup == nil || liveness == nil {
			t.Fatalf("%s: startup %v, liveness %v", tc.id, startup, liveness)
		}

		for name, p := range map[string]map[string]any{"startup": startup, "liveness": liveness} {
			get := p["httpGet"].(map[string]any)
			if get["port"] != tc.port || get["path"] != tc.path || get["scheme"] != "HTTPS" {
				t.Errorf("%s %s probe: %v", tc.id, name, get)
			}

			if p["timeoutSeconds"] != 15 {
				t.Errorf("%s %s probe timeout: %v, want 15", tc.id, name, p["timeoutSeconds"])
			}
		}

		if budget := startup["periodSeconds"].(int) * startup["failureThreshold"].(int); budget != 120 {
			t.Errorf("%s startup budget %d s, want 120", tc.id, budget)
		}
	}
}
