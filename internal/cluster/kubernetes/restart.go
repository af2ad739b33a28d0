package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// RestartedAtAnnotation is the pod template annotation kubectl rollout
// restart sets: changing it replaces every pod of the workload.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// Workload names a DaemonSet or a Deployment.
type Workload struct {
	DaemonSet       bool
	Namespace, Name string
}

func (w Workload) String() string {
	if w.DaemonSet {
		return "daemonset/" + w.Namespace + "/" + w.Name
	}

	return "deployment/" + w.Namespace + "/" + w.Name
}

func (w Workload) resource() schema.GroupVersionResource {
	if w.DaemonSet {
		return daemonSetsResource
	}

	return deploymentResource
}

// ConfigMapData is one key of a ConfigMap's data; IsNotFound when the
// ConfigMap does not exist.
func (c *Client) ConfigMapData(ctx context.Context, namespace, name, key string) (string, error) {
	u, err := c.dyn.Resource(configMapsResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}

	data, _, _ := unstructured.NestedString(u.Object, "data", key)

	return data, nil
}

// Workloads lists namespace's DaemonSets and Deployments, DaemonSets first.
func (c *Client) Workloads(ctx context.Context, namespace string) ([]Workload, error) {
	var out []Workload

	for _, ds := range []bool{true, false} {
		w := Workload{DaemonSet: ds, Namespace: namespace}

		list, err := c.dyn.Resource(w.resource()).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", w.resource().Resource, err)
		}

		for _, item := range list.Items {
			w.Name = item.GetName()
			out = append(out, w)
		}
	}

	return out, nil
}

// RolloutRestart replaces a workload's pods as kubectl rollout restart
// does: a new restartedAt annotation on the pod template, stamped at.
func (c *Client) RolloutRestart(ctx context.Context, w Workload, at time.Time) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{RestartedAtAnnotation: at.UTC().Format(time.RFC3339)},
	}}}})
	if err != nil {
		return err
	}

	if _, err := c.dyn.Resource(w.resource()).Namespace(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("restart %s: %w", w, err)
	}

	return nil
}

// Rollout reads a workload's rollout.
func (c *Client) Rollout(ctx context.Context, w Workload) (*Rollout, error) {
	return c.rollout(ctx, w.resource(), w.Namespace, w.Name)
}
