package kubernetes_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
	"github.com/talosbox/talosbox/internal/k8s/apiservertest"
)

var (
	nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	podsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	dsGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
	depGVR   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	cmGVR    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// TestClient reads nodes, pods and rollouts from a real kube-apiserver
// through a client built from a kubeconfig, as talosctl builds it from the
// one a node hands out, and sees its errors as the API server gives them.
func TestClient(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.Options{})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}

	kc := kubeconfigFor(t, srv.URL, srv.Config.CAData, srv.Config.CertData, srv.Config.KeyData)

	// A wrong server in the kubeconfig is what --k8s-endpoint overrides.
	c, err := kubernetes.FromKubeconfig(kubeconfigFor(t, "https://127.0.0.1:1", srv.Config.CAData, srv.Config.CertData, srv.Config.KeyData), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}

	if c.Server() != srv.URL {
		t.Errorf("server %q, want %q", c.Server(), srv.URL)
	}

	// Nodes: labels, the first InternalIP, readiness, cordon, version.
	cp := create(ctx, t, dyn, nodesGVR, "", obj("v1", "Node", "cp-1", "", map[string]any{"unschedulable": true}))
	cp.SetLabels(map[string]string{"node-role.kubernetes.io/control-plane": ""})
	cp = update(ctx, t, dyn, nodesGVR, "", cp)
	setStatus(ctx, t, dyn, nodesGVR, "", cp, map[string]any{
		"addresses": []any{
			map[string]any{"type": "Hostname", "address": "cp-1"},
			map[string]any{"type": "InternalIP", "address": "10.5.0.2"},
			map[string]any{"type": "InternalIP", "address": "fd00::2"},
		},
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T10:00:09Z"}},
		"nodeInfo":   nodeInfo("v1.34.12"),
	})
	w := create(ctx, t, dyn, nodesGVR, "", obj("v1", "Node", "worker-1", "", nil))
	setStatus(ctx, t, dyn, nodesGVR, "", w, map[string]any{
		"conditions": []any{map[string]any{"type": "Ready", "status": "False"}},
		"nodeInfo":   nodeInfo("v1.33.5"),
	})

	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}

	slices.SortFunc(nodes, func(a, b kubernetes.Node) int { return strings.Compare(a.Name, b.Name) })

	if len(nodes) != 2 {
		t.Fatalf("nodes: %+v", nodes)
	}

	if n := nodes[0]; n.Name != "cp-1" || !n.ControlPlane() || n.IP != "10.5.0.2" || !n.Ready || !n.Unschedulable || n.KubeletVersion != "v1.34.12" {
		t.Errorf("cp-1: %+v", n)
	}

	if n := nodes[1]; n.Name != "worker-1" || n.ControlPlane() || n.IP != "" || n.Ready || n.Unschedulable || n.KubeletVersion != "v1.33.5" {
		t.Errorf("worker-1: %+v", n)
	}

	// Pods by component, with the mirror annotation and readiness.
	mirror := obj("v1", "Pod", "kube-apiserver-cp-1", "kube-system", map[string]any{
		"nodeName":   "cp-1",
		"containers": []any{map[string]any{"name": "kube-apiserver", "image": "registry.k8s.io/kube-apiserver:v1.34.12"}},
	})
	mirror.SetLabels(map[string]string{"k8s-app": "kube-apiserver", "tier": "control-plane"})
	mirror.SetAnnotations(map[string]string{"kubernetes.io/config.mirror": "abc", "talos.dev/config-version": "3"})
	mirror = create(ctx, t, dyn, podsGVR, "kube-system", mirror)
	setStatus(ctx, t, dyn, podsGVR, "kube-system", mirror, map[string]any{
		"phase": "Running", "hostIP": "10.5.0.2",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T10:00:07Z"}},
		"containerStatuses": []any{map[string]any{
			"name": "kube-apiserver", "image": "x", "imageID": "", "ready": true, "restartCount": int64(0),
			"state": map[string]any{"running": map[string]any{"startedAt": "2026-11-29T10:00:03Z"}},
		}},
	})

	// A pod that is not a mirror needs its service account; with no
	// controller manager here, nothing else makes it.
	create(ctx, t, dyn, schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, "kube-system", obj("v1", "ServiceAccount", "default", "kube-system", nil))

	other := obj("v1", "Pod", "coredns-1", "kube-system", map[string]any{
		"containers": []any{map[string]any{"name": "coredns", "image": "coredns"}},
	})
	other.SetLabels(map[string]string{"k8s-app": "kube-dns"})
	create(ctx, t, dyn, podsGVR, "kube-system", other)

	pods, err := c.ComponentPods(ctx, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}

	if len(pods) != 1 {
		t.Fatalf("kube-apiserver pods: %+v", pods)
	}

	if p := pods[0]; p.Name != "kube-apiserver-cp-1" || !p.Mirror() || !p.Ready || p.Phase != "Running" || p.HostIP != "10.5.0.2" ||
		p.Annotations["talos.dev/config-version"] != "3" || !slices.Equal(p.Images, []string{"registry.k8s.io/kube-apiserver:v1.34.12"}) {
		t.Errorf("pod: %+v", p)
	}

	if all, err := c.Pods(ctx, "kube-system", ""); err != nil || len(all) != 2 {
		t.Errorf("all of kube-system's pods: %d, %v", len(all), err)
	}

	// Rollouts: a DaemonSet and a Deployment in the same terms.
	template := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "x", "image": "x:v2"}}},
	}
	selector := map[string]any{"matchLabels": map[string]any{"app": "x"}}

	ds := create(ctx, t, dyn, dsGVR, "kube-system", obj("apps/v1", "DaemonSet", "kube-proxy", "kube-system", map[string]any{"selector": selector, "template": template}))
	setStatus(ctx, t, dyn, dsGVR, "kube-system", ds, map[string]any{
		"observedGeneration": ds.GetGeneration(), "desiredNumberScheduled": int64(3), "currentNumberScheduled": int64(3),
		"numberMisscheduled": int64(0), "updatedNumberScheduled": int64(3), "numberAvailable": int64(2), "numberReady": int64(2),
	})

	r, err := c.DaemonSet(ctx, "kube-system", "kube-proxy")
	if err != nil {
		t.Fatal(err)
	}

	if !r.DaemonSet || r.Desired != 3 || r.Updated != 3 || r.Available != 2 || r.Ready != 2 || !slices.Equal(r.Images, []string{"x:v2"}) {
		t.Errorf("daemonset: %+v", r)
	}

	if err := r.Done(); err == nil || err.Error() != "3 of 3 updated, 2 available" {
		t.Errorf("a DaemonSet with 2 of 3 available: %v", err)
	}

	dep := create(ctx, t, dyn, depGVR, "kube-system", obj("apps/v1", "Deployment", "coredns", "kube-system", map[string]any{
		"replicas": int64(2), "selector": selector, "template": template,
	}))
	setStatus(ctx, t, dyn, depGVR, "kube-system", dep, map[string]any{
		"observedGeneration": dep.GetGeneration(), "replicas": int64(2), "updatedReplicas": int64(2),
		"availableReplicas": int64(2), "readyReplicas": int64(2),
	})

	if r, err := c.Deployment(ctx, "kube-system", "coredns"); err != nil || r.DaemonSet || r.Desired != 2 || r.Ready != 2 || r.Done() != nil {
		t.Errorf("deployment: %+v, %v", r, err)
	}

	// cluster create's timeline: what the API server stamped, in time
	// order, pods named by component; only a Ready node turns Ready.
	ms, err := c.Milestones(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, m := range ms {
		got = append(got, m.Node+" "+m.What)
	}

	at0 := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	want := map[string]time.Time{
		"cp-1 kube-apiserver started": at0("2026-11-29T10:00:03Z"),
		"cp-1 kube-apiserver Ready":   at0("2026-11-29T10:00:07Z"),
		"cp-1 node Ready":             at0("2026-11-29T10:00:09Z"),
	}

	for _, m := range ms {
		if w, ok := want[m.Node+" "+m.What]; ok {
			if !m.At.Equal(w) {
				t.Errorf("%s %s at %s, want %s", m.Node, m.What, m.At, w)
			}

			delete(want, m.Node+" "+m.What)
		}
	}

	for _, line := range []string{"cp-1 node registered", "worker-1 node registered", " daemonset/kube-proxy created", " deployment/coredns created"} {
		if !slices.Contains(got, line) {
			t.Errorf("milestones miss %q: %q", line, got)
		}
	}

	if len(want) > 0 || slices.Contains(got, "worker-1 node Ready") || !slices.IsSortedFunc(ms, func(a, b kubernetes.Milestone) int { return a.At.Compare(b.At) }) {
		t.Errorf("milestones %q: missing %v, or a NotReady node Ready, or out of order", got, want)
	}

	// rotate-ca's restarts: both workloads listed, DaemonSets first; a
	// restart stamps the pod template as kubectl rollout restart does.
	ws, err := c.Workloads(ctx, "kube-system")
	if err != nil || len(ws) != 2 || ws[0].String() != "daemonset/kube-system/kube-proxy" || ws[1].String() != "deployment/kube-system/coredns" {
		t.Errorf("workloads: %v, %v", ws, err)
	}

	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, w := range ws {
		if err := c.RolloutRestart(ctx, w, at); err != nil {
			t.Fatal(err)
		}
	}

	if got, _ := dyn.Resource(dsGVR).Namespace("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{}); got.GetGeneration() != ds.GetGeneration()+1 {
		t.Errorf("a restarted DaemonSet at generation %d, want %d", got.GetGeneration(), ds.GetGeneration()+1)
	} else if v, _, _ := unstructured.NestedString(got.Object, "spec", "template", "metadata", "annotations", kubernetes.RestartedAtAnnotation); v != "2026-11-29T12:00:00Z" {
		t.Errorf("restartedAt %q", v)
	}

	if r, err := c.Rollout(ctx, ws[1]); err != nil || r.Done() == nil {
		t.Errorf("a restarted Deployment the controller has yet to see is done: %+v, %v", r, err)
	}

	cm := obj("v1", "ConfigMap", "kube-root-ca.crt", "kube-system", nil)
	cm.Object["data"] = map[string]any{"ca.crt": "PEM"}
	create(ctx, t, dyn, cmGVR, "kube-system", cm)

	if v, err := c.ConfigMapData(ctx, "kube-system", "kube-root-ca.crt", "ca.crt"); err != nil || v != "PEM" {
		t.Errorf("ConfigMapData: %q, %v", v, err)
	}

	if _, err := c.ConfigMapData(ctx, "kube-system", "nothing", "ca.crt"); !kubernetes.IsNotFound(err) {
		t.Errorf("a missing ConfigMap: %v", err)
	}

	// Missing objects are IsNotFound, for reads and deletes alike.
	if _, err := c.DaemonSet(ctx, "kube-system", "kube-flannel"); !kubernetes.IsNotFound(err) {
		t.Errorf("a missing DaemonSet: %v", err)
	}

	if err := c.DeleteDaemonSet(ctx, "kube-system", "kube-proxy"); err != nil {
		t.Fatal(err)
	}

	if err := c.DeleteDaemonSet(ctx, "kube-system", "kube-proxy"); !kubernetes.IsNotFound(err) {
		t.Errorf("deleting it again: %v", err)
	}

	// A user without rights is refused, and the error says so.
	nobody, err := kubernetes.New(srv.UserConfig(t, "nobody"))
	if err != nil {
		t.Fatal(err)
	}

	if _, err := nobody.Nodes(ctx); err == nil || kubernetes.IsNotFound(err) || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a user without rights listed nodes: %v", err)
	}

	// The same kubeconfig, aimed elsewhere, fails to connect.
	c2, err := kubernetes.FromKubeconfig(kc, "")
	if err != nil {
		t.Fatal(err)
	}

	moved, err := c2.WithServer("https://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}

	if _, err := moved.Nodes(ctx); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a server that is not there: %v", err)
	}
}

func TestFromKubeconfigRefusesGarbage(t *testing.T) {
	for _, data := range []string{"clusters: [: nope", "apiVersion: v1\nkind: Config\n"} {
		if _, err := kubernetes.FromKubeconfig([]byte(data), ""); err == nil {
			t.Errorf("%q: accepted", data)
		}
	}
}

func kubeconfigFor(t *testing.T, server string, ca, crt, key []byte) []byte {
	t.Helper()

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lab"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin@lab"] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts["admin@lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "admin@lab"}
	cfg.CurrentContext = "admin@lab"

	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}

	return data
}

func nodeInfo(kubelet string) map[string]any {
	return map[string]any{
		"kubeletVersion": kubelet, "machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "k",
		"osImage": "o", "containerRuntimeVersion": "c", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64",
	}
}

func obj(apiVersion, kind, name, ns string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetName(name)
	u.SetNamespace(ns)

	if spec != nil {
		u.Object["spec"] = spec
	}

	return u
}

func create(ctx context.Context, t *testing.T, c dynamic.Interface, gvr schema.GroupVersionResource, ns string, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()

	out, err := c.Resource(gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", gvr.Resource, o.GetName(), err)
	}

	return out
}

func update(ctx context.Context, t *testing.T, c dynamic.Interface, gvr schema.GroupVersionResource, ns string, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()

	out, err := c.Resource(gvr).Namespace(ns).Update(ctx, o, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update %s %s: %v", gvr.Resource, o.GetName(), err)
	}

	return out
}

func setStatus(ctx context.Context, t *testing.T, c dynamic.Interface, gvr schema.GroupVersionResource, ns string, o *unstructured.Unstructured, status map[string]any) {
	t.Helper()

	o = o.DeepCopy()
	o.Object["status"] = status

	if _, err := c.Resource(gvr).Namespace(ns).UpdateStatus(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status of %s %s: %v", gvr.Resource, o.GetName(), err)
	}
}
