package k8s_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/talosbox/talosbox/internal/k8s"
	"github.com/talosbox/talosbox/internal/k8s/apiservertest"
)

var (
	nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	podsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	saGVR    = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	pdbGVR   = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
)

// TestCordonDrainUncordon runs the drain an upgrade does against a real
// kube-apiserver with the Node authorizer and NodeRestriction, as the
// node's kubelet: its credentials are the ones the node uses.
func TestCordonDrainUncordon(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.Options{ExtraArgs: []string{
		"--authorization-mode=Node", "--enable-admission-plugins=NodeRestriction", // RBAC is already on
	}})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	admin, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}

	kubelet, err := dynamic.NewForConfig(srv.UserConfig(t, "system:node:n1", "system:nodes"))
	if err != nil {
		t.Fatal(err)
	}

	// n1 registers itself, as a kubelet does; n2 is some other node.
	create(ctx, t, kubelet, nodesGVR, "", obj("v1", "Node", "n1", "", nil))
	create(ctx, t, admin, nodesGVR, "", obj("v1", "Node", "n2", "", nil))

	// No controller manager makes the namespaces' service accounts here.
	for _, ns := range []string{"default", "kube-system"} {
		create(ctx, t, admin, saGVR, ns, obj("v1", "ServiceAccount", "default", ns, nil))
	}

	rs := owner("ReplicaSet", "web")
	create(ctx, t, admin, podsGVR, "default", pod("web-1", "n1", nil, rs))
	create(ctx, t, admin, podsGVR, "default", pod("guarded-1", "n1", map[string]any{"app": "guarded"}, rs))
	create(ctx, t, admin, podsGVR, "kube-system", pod("proxy-1", "n1", nil, owner("DaemonSet", "proxy")))
	create(ctx, t, admin, podsGVR, "default", pod("lone", "n1", nil, nil))
	create(ctx, t, admin, podsGVR, "default", pod("web-2", "n2", nil, rs))

	mirror := pod("kube-apiserver-n1", "n1", nil, nil)
	mirror.SetAnnotations(map[string]string{"kubernetes.io/config.mirror": "abc"})
	create(ctx, t, admin, podsGVR, "kube-system", mirror)

	create(ctx, t, admin, podsGVR, "default", pod("job-1", "n1", nil, owner("Job", "job")))

	// The kubelet would say: the job's pod finished, the others run (a
	// Pending pod is evicted whatever its budget says).
	for _, p := range []struct{ ns, name, phase string }{
		{"default", "job-1", "Succeeded"}, {"default", "web-1", "Running"}, {"default", "guarded-1", "Running"},
		{"kube-system", "proxy-1", "Running"}, {"default", "lone", "Running"},
	} {
		setPhase(ctx, t, kubelet, p.ns, p.name, p.phase)
	}

	// A budget the disruption controller never processed (none runs
	// here): the API refuses every eviction it covers, 429.
	pdb := obj("policy/v1", "PodDisruptionBudget", "guarded", "default", map[string]any{
		"minAvailable": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "guarded"}},
	})
	create(ctx, t, admin, pdbGVR, "default", pdb)

	go standInKubelet(ctx, admin, "n1")

	var log strings.Builder

	d, err := k8s.NewDrainer(srv.UserConfig(t, "system:node:n1", "system:nodes"))
	if err != nil {
		t.Fatal(err)
	}

	d.Log, d.Timeout, d.Poll = &log, 3*time.Second, 100*time.Millisecond

	if err := d.Cordon(ctx, "n1"); err != nil {
		t.Fatal(err)
	}

	n1 := get(ctx, t, admin, nodesGVR, "", "n1")
	if u, _, _ := unstructured.NestedBool(n1.Object, "spec", "unschedulable"); !u || n1.GetAnnotations()[k8s.AnnotationCordoned] != "true" {
		t.Fatalf("n1 after cordon: unschedulable %v, annotations %v", u, n1.GetAnnotations())
	}

	report, err := d.DrainReport(ctx, "n1")
	if err == nil || !strings.Contains(err.Error(), "1 pods not evicted: default/guarded-1") {
		t.Fatalf("drain with a budget that refuses: %v\n%s", err, log.String())
	}

	want := k8s.DrainReport{
		Evicted: []string{"default/web-1"},
		Skipped: []string{"default/job-1", "default/lone", "kube-system/kube-apiserver-n1", "kube-system/proxy-1"},
		Failed:  []string{"default/guarded-1"},
	}
	if !slices.Equal(report.Evicted, want.Evicted) || !slices.Equal(report.Skipped, want.Skipped) || !slices.Equal(report.Failed, want.Failed) {
		t.Fatalf("drain report %+v, want %+v\n%s", report, want, log.String())
	}

	if got := podNames(ctx, t, admin); !slices.Equal(got, []string{"default/guarded-1", "default/job-1", "default/lone", "default/web-2", "kube-system/kube-apiserver-n1", "kube-system/proxy-1"}) {
		t.Fatalf("pods after the first drain: %v", got)
	}

	// The budget gone, the next drain evicts the pod it protected.
	if err := admin.Resource(pdbGVR).Namespace("default").Delete(ctx, "guarded", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := d.Drain(ctx, "n1"); err != nil {
		t.Fatalf("drain: %v\n%s", err, log.String())
	}

	if got := podNames(ctx, t, admin); slices.Contains(got, "default/guarded-1") || !slices.Contains(got, "default/web-2") {
		t.Fatalf("pods after the second drain: %v", got)
	}

	// The kubelet's credentials reach its own node only.
	if err := d.Cordon(ctx, "n2"); !apierrors.IsForbidden(err) {
		t.Fatalf("cordon of another node with n1's credentials: %v, want forbidden", err)
	}

	changed, err := d.Uncordon(ctx, "n1", false)
	if err != nil || !changed {
		t.Fatalf("uncordon: %v, %v", changed, err)
	}

	n1 = get(ctx, t, admin, nodesGVR, "", "n1")
	if u, _, _ := unstructured.NestedBool(n1.Object, "spec", "unschedulable"); u || n1.GetAnnotations()[k8s.AnnotationCordoned] != "" {
		t.Fatalf("n1 after uncordon: unschedulable %v, annotations %v", u, n1.GetAnnotations())
	}

	// A node an admin cordoned: the upgrade's cordon leaves it, and its
	// uncordon does not undo the admin's.
	adminDrainer, err := k8s.NewDrainer(srv.Config)
	if err != nil {
		t.Fatal(err)
	}

	n2 := get(ctx, t, admin, nodesGVR, "", "n2")
	if err := unstructured.SetNestedField(n2.Object, true, "spec", "unschedulable"); err != nil {
		t.Fatal(err)
	}

	if _, err := admin.Resource(nodesGVR).Update(ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := adminDrainer.Cordon(ctx, "n2"); err != nil {
		t.Fatal(err)
	}

	if changed, err := adminDrainer.Uncordon(ctx, "n2", false); err != nil || changed {
		t.Fatalf("uncordon of a node an admin cordoned: changed %v, %v", changed, err)
	}

	if n2 = get(ctx, t, admin, nodesGVR, "", "n2"); n2.GetAnnotations()[k8s.AnnotationCordoned] != "" {
		t.Fatalf("n2 annotated: %v", n2.GetAnnotations())
	} else if u, _, _ := unstructured.NestedBool(n2.Object, "spec", "unschedulable"); !u {
		t.Fatal("n2 was uncordoned")
	}

	for _, line := range []string{"[talos] cordoned node n1", "[talos] drain: skipping DaemonSet pod kube-system/proxy-1",
		"[talos] drain: skipping static pod kube-system/kube-apiserver-n1", "[talos] drained node n1: 1 pods evicted", "[talos] uncordoned node n1"} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("log lacks %q:\n%s", line, log.String())
		}
	}
}

// standInKubelet does the kubelet's share of a graceful delete, which no
// kubelet runs here to do: a pod marked for deletion on its node is
// deleted for good (as the kubelet does once its containers stopped).
func standInKubelet(ctx context.Context, c dynamic.Interface, node string) {
	for ctx.Err() == nil {
		list, err := c.Resource(podsGVR).Namespace("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err == nil {
			for _, p := range list.Items {
				if p.GetDeletionTimestamp() != nil {
					zero := int64(0)
					_ = c.Resource(podsGVR).Namespace(p.GetNamespace()).Delete(ctx, p.GetName(), metav1.DeleteOptions{GracePeriodSeconds: &zero})
				}
			}
		}

		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func setPhase(ctx context.Context, t *testing.T, c dynamic.Interface, ns, name, phase string) {
	t.Helper()

	p := get(ctx, t, c, podsGVR, ns, name)
	if err := unstructured.SetNestedField(p.Object, phase, "status", "phase"); err != nil {
		t.Fatal(err)
	}

	if _, err := c.Resource(podsGVR).Namespace(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod %s/%s status: %v", ns, name, err)
	}
}

func obj(apiVersion, kind, name, ns string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetName(name)

	if ns != "" {
		u.SetNamespace(ns)
	}

	if spec != nil {
		u.Object["spec"] = spec
	}

	return u
}

func owner(kind, name string) *metav1.OwnerReference {
	yes := true

	apiVersion := "apps/v1"
	if kind == "Job" {
		apiVersion = "batch/v1"
	}

	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("0f5e0c4a-5b8c-4a7e-9d3e-" + strings.Repeat("a", 12)), Controller: &yes}
}

func pod(name, node string, labels map[string]any, ref *metav1.OwnerReference) *unstructured.Unstructured {
	p := obj("v1", "Pod", name, "", map[string]any{
		"nodeName":                     node,
		"automountServiceAccountToken": false,
		"containers":                   []any{map[string]any{"name": "c", "image": "registry.k8s.io/pause:3.10"}},
	})

	if labels != nil {
		p.Object["metadata"].(map[string]any)["labels"] = labels
	}

	if ref != nil {
		p.SetOwnerReferences([]metav1.OwnerReference{*ref})
	}

	return p
}

func create(ctx context.Context, t *testing.T, c dynamic.Interface, gvr schema.GroupVersionResource, ns string, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()

	out, err := c.Resource(gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
	}

	return out
}

func get(ctx context.Context, t *testing.T, c dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()

	out, err := c.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	return out
}

func podNames(ctx context.Context, t *testing.T, c dynamic.Interface) []string {
	t.Helper()

	list, err := c.Resource(podsGVR).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var names []string
	for _, p := range list.Items {
		names = append(names, p.GetNamespace()+"/"+p.GetName())
	}

	slices.Sort(names)

	return names
}
