package k8s

// Cordon, drain and uncordon, as Talos does them around an upgrade's
// reboot: the node is marked unschedulable with an annotation saying that
// Talos did it (so a node an admin cordoned is never uncordoned behind
// their back), the pods that would not come back by themselves are
// evicted through the eviction API (which honours PodDisruptionBudgets),
// and once the node is back and Ready the mark is taken off.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The annotation Talos puts on the nodes it cordons.
const (
	AnnotationCordoned      = "talos.dev/cordoned"
	AnnotationCordonedValue = "true"
)

// mirrorPodAnnotation marks the API's copy of a static pod: evicting it
// does nothing, the kubelet owns the pod.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// DefaultDrainTimeout bounds a drain (Talos's DrainTimeout): a pod a
// disruption budget keeps is left behind when it passes.
const DefaultDrainTimeout = 5 * time.Minute

// Drainer cordons, drains and uncordons one cluster's nodes.
type Drainer struct {
	client dynamic.Interface
	// Log gets one line per step ("[talos] ..."); io.Discard when nil.
	Log io.Writer
	// Timeout bounds Drain (DefaultDrainTimeout when zero).
	Timeout time.Duration
	// Poll paces the retries of an eviction a disruption budget refuses
	// and the checks that an evicted pod is gone (1 s when zero).
	Poll time.Duration

	// logMu serializes Log: pods are evicted in parallel, each logging.
	logMu sync.Mutex
}

// NewDrainer makes a Drainer with the credentials of rc; a kubelet's own
// are enough (the Node authorizer lets it change its Node and evict its
// pods).
func NewDrainer(rc *rest.Config) (*Drainer, error) {
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}

	return &Drainer{client: dc}, nil
}

func (d *Drainer) logf(format string, args ...any) {
	if d.Log != nil {
		d.logMu.Lock()
		defer d.logMu.Unlock()

		fmt.Fprintf(d.Log, "[talos] "+format+"\n", args...)
	}
}

func (d *Drainer) poll() time.Duration {
	if d.Poll > 0 {
		return d.Poll
	}

	return time.Second
}

// CordonAndDrain cordons the node, then drains it.
func (d *Drainer) CordonAndDrain(ctx context.Context, node string) error {
	if err := d.Cordon(ctx, node); err != nil {
		return err
	}

	return d.Drain(ctx, node)
}

// Cordon marks the node unschedulable and annotates it as cordoned by
// Talos. A node already unschedulable is left as it is: whoever cordoned
// it uncordons it.
func (d *Drainer) Cordon(ctx context.Context, node string) error {
	return d.retryConflicts(ctx, "cordon node "+node, func() error {
		n, err := d.client.Resource(nodesResource).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}

		if unschedulable, _, _ := unstructured.NestedBool(n.Object, "spec", "unschedulable"); unschedulable {
			d.logf("node %s is already cordoned (not by Talos): it stays so afterwards", node)
			return nil
		}

		if err := d.patchNode(ctx, n, true, AnnotationCordonedValue); err != nil {
			return err
		}

		d.logf("cordoned node %s", node)

		return nil
	})
}

// Uncordon makes the node schedulable again if Talos cordoned it (or
// whoever did, with force), and says whether it changed anything.
func (d *Drainer) Uncordon(ctx context.Context, node string, force bool) (bool, error) {
	var changed bool

	err := d.retryConflicts(ctx, "uncordon node "+node, func() error {
		n, err := d.client.Resource(nodesResource).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}

		ours := n.GetAnnotations()[AnnotationCordoned] == AnnotationCordonedValue
		unschedulable, _, _ := unstructured.NestedBool(n.Object, "spec", "unschedulable")

		if !ours && (!force || !unschedulable) {
			return nil
		}

		if err := d.patchNode(ctx, n, false, ""); err != nil {
			return err
		}

		changed = unschedulable
		if changed {
			d.logf("uncordoned node %s", node)
		}

		return nil
	})

	return changed, err
}

// NodeReady says whether the node's Ready condition is True.
func (d *Drainer) NodeReady(ctx context.Context, node string) (bool, error) {
	n, err := d.client.Resource(nodesResource).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false, err
	}

	conds, _, _ := unstructured.NestedSlice(n.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == "True", nil
		}
	}

	return false, nil
}

// patchNode sets spec.unschedulable and the annotation (removed when
// value is empty), on the version read: a concurrent change is a
// conflict, and the caller reads again.
func (d *Drainer) patchNode(ctx context.Context, n *unstructured.Unstructured, unschedulable bool, value string) error {
	var annotation any
	if value != "" {
		annotation = value
	}

	patch, _ := json.Marshal(map[string]any{ //nolint:errchkjson // plain maps
		"metadata": map[string]any{
			"resourceVersion": n.GetResourceVersion(),
			"annotations":     map[string]any{AnnotationCordoned: annotation},
		},
		"spec": map[string]any{"unschedulable": unschedulable},
	})

	_, err := d.client.Resource(nodesResource).Patch(ctx, n.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "talos"})

	return err
}

// retryConflicts runs op until it neither conflicts nor fails with an
// error worth another try, for at most 30 s.
func (d *Drainer) retryConflicts(ctx context.Context, what string, op func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	for {
		err := op()
		if err == nil {
			return nil
		}

		if !apierrors.IsConflict(err) && !retryable(err) {
			return fmt.Errorf("%s: %w", what, err)
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(d.poll() / 4):
		}
	}
}

// retryable says whether a request may succeed when sent again: the API
// server said so, or the connection to it broke (an API server restarting
// or starved of CPU mid-response: client-go then reports "unexpected error
// when reading response body. Please retry"). Eviction is idempotent, so
// sending one again whose answer was lost is harmless.
func retryable(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err)
}

// DrainReport says what a drain did with each pod on the node.
type DrainReport struct {
	Evicted []string // namespace/name
	// Skipped pods come back by themselves (DaemonSet pods, static pods'
	// mirrors), have no controller to recreate them elsewhere, or have
	// finished.
	Skipped []string
	// Failed pods could not be evicted in time (a disruption budget that
	// never allowed it, a pod that never went).
	Failed []string
}

// Drain evicts the node's pods that a controller would recreate
// elsewhere, each in its own goroutine, and waits until they are gone.
// An eviction a PodDisruptionBudget refuses is tried again until the
// timeout; the pods left then are reported and the error says so.
func (d *Drainer) Drain(ctx context.Context, node string) error {
	_, err := d.DrainReport(ctx, node)
	return err
}

// DrainReport is Drain, also saying what it did.
func (d *Drainer) DrainReport(ctx context.Context, node string) (DrainReport, error) {
	timeout := d.Timeout
	if timeout == 0 {
		timeout = DefaultDrainTimeout
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	list, err := d.client.Resource(podsResource).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return DrainReport{}, fmt.Errorf("drain node %s: list its pods: %w", node, err)
	}

	var (
		mu     sync.Mutex
		report DrainReport
		wg     sync.WaitGroup
	)

	record := func(into *[]string, pod string) {
		mu.Lock()
		*into = append(*into, pod)
		mu.Unlock()
	}

	for i := range list.Items {
		p := &list.Items[i]
		name := p.GetNamespace() + "/" + p.GetName()

		if why := skipReason(p); why != "" {
			d.logf("drain: skipping %s pod %s", why, name)
			record(&report.Skipped, name)

			continue
		}

		wg.Go(func() {
			if err := d.evict(ctx, p); err != nil {
				d.logf("drain: %s was not evicted: %v", name, err)
				record(&report.Failed, name)

				return
			}

			record(&report.Evicted, name)
		})
	}

	wg.Wait()

	sort.Strings(report.Evicted)
	sort.Strings(report.Skipped)
	sort.Strings(report.Failed)

	if len(report.Failed) > 0 {
		return report, fmt.Errorf("drain node %s: %d pods not evicted: %s", node, len(report.Failed), strings.Join(report.Failed, ", "))
	}

	d.logf("drained node %s: %d pods evicted, %d left to come back by themselves", node, len(report.Evicted), len(report.Skipped))

	return report, nil
}

func nodeName(p *unstructured.Unstructured) string {
	n, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
	return n
}

// skipReason says why a pod is not evicted, "" when it is.
func skipReason(p *unstructured.Unstructured) string {
	if _, ok := p.GetAnnotations()[mirrorPodAnnotation]; ok {
		return "static"
	}

	if phase, _, _ := unstructured.NestedString(p.Object, "status", "phase"); phase == "Succeeded" || phase == "Failed" {
		return "finished"
	}

	var controller *metav1.OwnerReference

	for _, ref := range p.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			controller = &ref

			break
		}
	}

	switch {
	case controller == nil:
		return "unmanaged"
	case controller.Kind == "DaemonSet":
		return "DaemonSet"
	}

	return ""
}

// evict asks the API to evict the pod, again while a disruption budget
// refuses, and waits until it is gone (or replaced by a pod of the same
// name: a StatefulSet's).
func (d *Drainer) evict(ctx context.Context, p *unstructured.Unstructured) error {
	eviction := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy/v1",
		"kind":       "Eviction",
		"metadata":   map[string]any{"name": p.GetName(), "namespace": p.GetNamespace()},
	}}

	pods := d.client.Resource(podsResource).Namespace(p.GetNamespace())

	// A pod already being deleted is only waited for.
	for p.GetDeletionTimestamp() == nil {
		_, err := pods.Create(ctx, eviction, metav1.CreateOptions{}, "eviction")
		if err == nil || apierrors.IsNotFound(err) {
			break
		}

		if !apierrors.IsTooManyRequests(err) && !retryable(err) {
			return err
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(d.poll()):
		}
	}

	// A list by node, not a get: a kubelet may get only the pods bound to
	// it, and a pod deleted is no longer bound (a get is then forbidden,
	// not "not found").
	sel := metav1.ListOptions{FieldSelector: "metadata.name=" + p.GetName() + ",spec.nodeName=" + nodeName(p)}

	for {
		list, err := pods.List(ctx, sel)

		switch {
		case err == nil && (len(list.Items) == 0 || list.Items[0].GetUID() != p.GetUID()):
			return nil
		case err != nil && !retryable(err) && !errors.Is(err, context.DeadlineExceeded):
			return err
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("evicted, but still there: %w", ctx.Err())
		case <-time.After(d.poll()):
		}
	}
}
