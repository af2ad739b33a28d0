package manifests

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// FieldManager is the field manager Talos creates objects as.
const FieldManager = "talos"

// clientQPS lifts client-go's default 5 requests a second: a bootstrap
// run makes two requests per object, and the default would turn a first
// apply into ten seconds of client-side throttling.
const (
	clientQPS   = 100
	clientBurst = 200
)

// item is one object to apply and the manifest it came from.
type item struct {
	manifest string
	obj      *unstructured.Unstructured
}

// Apply creates the objects of ms that do not exist yet, as Talos's
// ManifestApplyController does: manifests in ID order, Namespaces first,
// then CRDs (each group by name), then everything else in its order. An
// object that exists is left alone, whatever it holds: this never updates
// or deletes. Objects whose kind is unknown, or that the API server
// rejects as invalid or a bad request, are reported together in err while
// the rest are still created (the caller retries, e.g. once a CRD is
// established); any other error stops the run. applied lists the IDs of
// the manifests all of whose objects now exist.
func Apply(ctx context.Context, cfg *rest.Config, ms []Manifest, logf func(format string, args ...any)) (applied []string, err error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}

	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}

	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("manifests: HTTP client: %w", err)
	}

	mapper, err := newMapper(cfg, hc)
	if err != nil {
		return nil, err
	}

	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("manifests: dynamic client: %w", err)
	}

	a := &applier{dyn: dyn, mapper: mapper, logf: logf}

	items := flatten(ms)

	// pending counts each manifest's objects not yet known to exist.
	pending := map[string]int{}
	for _, it := range items {
		pending[it.manifest]++
	}

	var soft []error

	for _, it := range items {
		err := a.apply(ctx, it.obj)
		if err == nil {
			pending[it.manifest]--

			continue
		}

		err = fmt.Errorf("manifest %q: %w", it.manifest, err)
		if !retriable(err) {
			return complete(ms, pending), err
		}

		soft = append(soft, err)
	}

	return complete(ms, pending), errors.Join(soft...)
}

// complete lists, in ID order, the manifests all of whose objects exist.
func complete(ms []Manifest, pending map[string]int) []string {
	var ids []string

	for _, m := range sortedManifests(ms) {
		if pending[m.ID] == 0 {
			ids = append(ids, m.ID)
		}
	}

	return ids
}

func sortedManifests(ms []Manifest) []Manifest {
	out := append([]Manifest(nil), ms...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })

	return out
}

// flatten orders the objects of all manifests as Talos does: Namespaces,
// then CRDs, each by name, then the rest as they come, manifests by ID.
func flatten(ms []Manifest) []item {
	var items []item

	for _, m := range sortedManifests(ms) {
		for _, obj := range m.Objects {
			items = append(items, item{manifest: m.ID, obj: obj})
		}
	}

	rank := func(o *unstructured.Unstructured) int {
		gvk := o.GroupVersionKind()

		switch {
		case gvk.Group == "" && gvk.Kind == "Namespace":
			return 0
		case gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
			return 1
		default:
			return 2
		}
	}

	sort.SliceStable(items, func(i, j int) bool {
		ri, rj := rank(items[i].obj), rank(items[j].obj)
		if ri != rj {
			return ri < rj
		}

		if ri < 2 {
			return items[i].obj.GetName() < items[j].obj.GetName()
		}

		return false
	})

	return items
}

type applier struct {
	dyn    dynamic.Interface
	mapper *mapper
	logf   func(format string, args ...any)
	// crdsCreated says a CRD was created since the mapper last read
	// discovery, so an unknown kind may be one of its kinds.
	crdsCreated bool
}

// errNoName marks an object that cannot be looked up, collected like an
// invalid object rather than stopping the run.
var errNoName = errors.New("metadata.name is empty")

// apply creates obj unless it exists; errors name the object, with the
// namespace it was looked up in.
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()

	mapping, err := a.mapper.mapping(ctx, gvk)
	if meta.IsNoMatchError(err) && a.crdsCreated {
		a.mapper.reset()
		a.crdsCreated = false
		mapping, err = a.mapper.mapping(ctx, gvk)
	}

	if err != nil {
		return fmt.Errorf("%s: mapping: %w", describe(obj), err)
	}

	if obj.GetName() == "" {
		return fmt.Errorf("%s: %w", describe(obj), errNoName)
	}

	obj = obj.DeepCopy() // the caller's manifests stay as rendered

	var client dynamic.ResourceInterface = a.dyn.Resource(mapping.resource)

	if mapping.namespaced {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}

		client = a.dyn.Resource(mapping.resource).Namespace(obj.GetNamespace())
	} else {
		obj.SetNamespace("")
	}

	_, err = client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err == nil {
		return nil // exists: Talos never updates
	}

	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s: get: %w", describe(obj), err)
	}

	_, err = client.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})

	switch {
	case apierrors.IsAlreadyExists(err):
		return nil // created meanwhile by someone else
	case err != nil:
		return fmt.Errorf("%s: create: %w", describe(obj), err)
	}

	if isCRD(gvk) {
		a.crdsCreated = true
	}

	a.logf("created %s/%s/%s/%s", gvk.Group, gvk.Version, gvk.Kind, obj.GetName())

	return nil
}

func isCRD(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

// retriable says whether err is one Talos collects and retries later
// rather than one that stops the run.
func retriable(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || errors.Is(err, errNoName)
}

// describe names an object as the log does, with its namespace if it has
// one: group/version/Kind/[namespace/]name.
func describe(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()

	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}

	return fmt.Sprintf("%s/%s/%s/%s", gvk.Group, gvk.Version, gvk.Kind, name)
}
