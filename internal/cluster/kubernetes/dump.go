package kubernetes

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// ListYAML is every object of a resource in namespace (all namespaces
// when empty) as one YAML list, as `kubectl get -o yaml` prints it.
// Secrets are refused: this is for bundles people send to others.
func (c *Client) ListYAML(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]byte, error) {
	if gvr.Resource == "secrets" {
		return nil, fmt.Errorf("list %s: secrets are never dumped", gvr.Resource)
	}

	list, err := c.dyn.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
	}

	for i := range list.Items {
		// Managed fields are the API server's bookkeeping, pages of it.
		list.Items[i].SetManagedFields(nil)
	}

	b, err := list.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
	}

	return yaml.JSONToYAML(b)
}
