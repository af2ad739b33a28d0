package manifests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// mapper finds the resource (plural name, scope) of a kind by reading the
// API server's discovery document of the kind's group/version, once per
// Apply. It replaces client-go's discovery client and restmapper, which
// link every typed API package (k8s.io/client-go/kubernetes/scheme) and
// the OpenAPI models: about 24 MB more in the node binary, for a lookup
// that needs one GET per group/version.
type mapper struct {
	client rest.Interface
	// byGV caches each group/version's resources; a nil entry means
	// the API server does not serve that group/version.
	byGV map[schema.GroupVersion]*metav1.APIResourceList
}

type mapping struct {
	resource   schema.GroupVersionResource
	namespaced bool
}

// newMapper shares hc with the dynamic client; the dynamic client's
// config supplies the JSON serializer a REST client requires.
func newMapper(cfg *rest.Config, hc *http.Client) (*mapper, error) {
	client, err := rest.UnversionedRESTClientForConfigAndClient(dynamic.ConfigFor(cfg), hc)
	if err != nil {
		return nil, fmt.Errorf("manifests: discovery client: %w", err)
	}

	return &mapper{client: client, byGV: map[schema.GroupVersion]*metav1.APIResourceList{}}, nil
}

// reset forgets what discovery said, after a CRD adds kinds.
func (m *mapper) reset() { clear(m.byGV) }

func (m *mapper) mapping(ctx context.Context, gvk schema.GroupVersionKind) (mapping, error) {
	gv := gvk.GroupVersion()

	list, ok := m.byGV[gv]
	if !ok {
		var err error
		if list, err = m.discover(ctx, gv); err != nil {
			return mapping{}, err
		}

		m.byGV[gv] = list
	}

	if list != nil {
		for _, r := range list.APIResources {
			// Subresources (pods/status) share their parent's kind.
			if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
				return mapping{resource: gv.WithResource(r.Name), namespaced: r.Namespaced}, nil
			}
		}
	}

	return mapping{}, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
}

// discover reads /api/v1 or /apis/<group>/<version>; nil, nil when the
// API server does not serve it.
func (m *mapper) discover(ctx context.Context, gv schema.GroupVersion) (*metav1.APIResourceList, error) {
	path := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}

	if gv.Version == "" {
		return nil, nil // no apiVersion: nothing can match
	}

	data, err := m.client.Get().AbsPath(path).DoRaw(ctx)

	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("discovery %s: %w", path, err)
	}

	var list metav1.APIResourceList
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("discovery %s: %w", path, err)
	}

	return &list, nil
}
