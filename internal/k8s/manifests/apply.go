package manifests

import (
	"context"
	"encoding/base64"
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

// FieldManager is the field manager talosbox applies objects as, Talos's.
const FieldManager = "talos"

// What marks an object as talosbox's. Every object Apply applies carries
// both; only objects that still carry the label are ever pruned, so
// removing the label from an object hands it over to its users.
const (
	// LabelManagedBy is the label key, ValueManagedBy its value
	// (select talosbox's objects with talos.dev/managed-by=talosbox).
	LabelManagedBy = "talos.dev/managed-by"
	ValueManagedBy = "talosbox"
	// AnnotationManifest names the manifest (its ID, such as
	// "99-my-inline" or "99-https://example.com/x.yaml") the object came
	// from; an annotation because IDs hold URLs, which label values
	// cannot.
	AnnotationManifest = "talos.dev/manifest"
)

// clientQPS lifts client-go's default 5 requests a second: a bootstrap
// run makes two requests per object, and the default would turn a first
// apply into ten seconds of client-side throttling.
const (
	clientQPS   = 100
	clientBurst = 200
)

// ApplyOptions adjust an Apply.
type ApplyOptions struct {
	// Prune deletes talosbox's objects that no manifest holds any more
	// (cluster.manifestsPrune); without it they are kept and reported.
	Prune bool
	// Hold are the IDs of manifests that could not be rendered this
	// time (an extraManifests URL that did not download): their objects
	// may still be wanted, so none of them is pruned or reported kept.
	Hold []string
	// Logf receives a line per object created, updated or pruned.
	Logf func(format string, args ...any)
	// Inventory names the inventory ConfigMap in kube-system
	// (InventoryName when empty); sets of manifests applied under
	// different names never prune each other's objects (tests do).
	Inventory string
}

// Result is what one Apply did. Objects are named "Kind namespace/name"
// ("Kind name" when cluster-scoped), in the order they were applied.
type Result struct {
	// Applied lists, in ID order, the manifests all of whose objects
	// were applied.
	Applied []string
	// Created, Updated and Unchanged are the objects applied, by what
	// the apply did to them (Updated: their resourceVersion changed).
	Created, Updated, Unchanged []string
	// Pruned are the objects deleted because no manifest holds them.
	Pruned []string
	// Kept are talosbox's objects that no manifest holds but that stay:
	// all of them without Prune; with it Namespaces and CRDs (deleting
	// one deletes what others put in it), and every one when the apply
	// had errors (what is missing may be a manifest not applied yet).
	Kept []string
}

// item is one object to apply and the manifest it came from.
type item struct {
	manifest string
	obj      *unstructured.Unstructured
}

// Apply server-side applies (field manager "talos", forced) every object
// of ms and, with o.Prune, deletes talosbox's objects that no manifest
// holds any more; see the package documentation for the rules. Objects go
// in Talos's order: manifests in ID order, Namespaces first, then CRDs
// (each group by name), then everything else in its order. Objects whose
// kind is unknown, or that the API server rejects as invalid or a bad
// request, are reported together in err while the rest are still applied
// (the caller retries, e.g. once a CRD is established); any other error
// stops the run. The result says what was done, errors or not.
func Apply(ctx context.Context, cfg *rest.Config, ms []Manifest, o ApplyOptions) (res Result, err error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}

	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}

	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return res, fmt.Errorf("manifests: HTTP client: %w", err)
	}

	mapper, err := newMapper(cfg, hc)
	if err != nil {
		return res, err
	}

	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return res, fmt.Errorf("manifests: dynamic client: %w", err)
	}

	if o.Inventory == "" {
		o.Inventory = InventoryName
	}

	a := &applier{dyn: dyn, mapper: mapper, logf: o.Logf, res: &res, inventory: o.Inventory}

	items := flatten(ms)

	// pending counts each manifest's objects not yet applied.
	pending := map[string]int{}
	for _, it := range items {
		pending[it.manifest]++
	}

	want := newWanted(o.Hold)

	var soft []error

	for _, it := range items {
		r, err := a.apply(ctx, it)
		want.add(it.obj, r, err == nil)

		if err == nil {
			pending[it.manifest]--

			continue
		}

		err = fmt.Errorf("manifest %q: %w", it.manifest, err)
		if !retriable(err) {
			res.Applied = complete(ms, pending)

			// Still record what was applied, so that it can be
			// pruned once no manifest holds it.
			return res, errors.Join(err, a.sync(ctx, want, syncRecord))
		}

		soft = append(soft, err)
	}

	res.Applied = complete(ms, pending)

	// An apply with errors may lack objects that are still wanted (their
	// manifest applies on a retry): prune nothing until it succeeds.
	mode := syncKeep
	if o.Prune && len(soft) == 0 {
		mode = syncPrune
	}

	if err := a.sync(ctx, want, mode); err != nil {
		return res, errors.Join(append(soft, err)...)
	}

	return res, errors.Join(soft...)
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

	sort.SliceStable(items, func(i, j int) bool {
		ri, rj := rank(items[i].obj.GroupVersionKind()), rank(items[j].obj.GroupVersionKind())
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

// rank puts Namespaces (0) and CRDs (1) before everything else (2).
func rank(gvk schema.GroupVersionKind) int {
	switch {
	case isNamespace(gvk):
		return 0
	case isCRD(gvk):
		return 1
	default:
		return 2
	}
}

type applier struct {
	dyn    dynamic.Interface
	mapper *mapper
	logf   func(format string, args ...any)
	res    *Result
	// inventory is the name of the inventory ConfigMap.
	inventory string
	// crdsChanged says a CRD was created or updated since the mapper
	// last read discovery, so an unknown kind may be one of its kinds.
	crdsChanged bool
}

// errNoName marks an object that cannot be looked up, collected like an
// invalid object rather than stopping the run.
var errNoName = errors.New("metadata.name is empty")

// apply server-side applies it.obj with talosbox's marks and records in
// the result whether it was created, updated or left unchanged. It
// returns the object's reference once mapped (zero before); errors name
// the object, with the namespace it was applied in.
func (a *applier) apply(ctx context.Context, it item) (ref, error) {
	obj := it.obj
	gvk := obj.GroupVersionKind()

	m, err := a.mapping(ctx, gvk)
	if err != nil {
		return ref{}, fmt.Errorf("%s: mapping: %w", describe(obj), err)
	}

	if obj.GetName() == "" {
		return ref{}, fmt.Errorf("%s: %w", describe(obj), errNoName)
	}

	if obj, err = prepare(obj, it.manifest, m.namespaced); err != nil {
		return ref{}, fmt.Errorf("%s: %w", describe(it.obj), err)
	}

	r := refOf(obj, it.manifest)
	client := a.client(m, obj.GetNamespace())

	// The GET tells a create from an update: the apply's answer alone
	// cannot, and a no-op apply keeps the resourceVersion.
	before := ""

	live, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})

	switch {
	case err == nil:
		before = live.GetResourceVersion()
	case !apierrors.IsNotFound(err):
		return r, fmt.Errorf("%s: get: %w", describe(obj), err)
	}

	after, err := client.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return r, fmt.Errorf("%s: apply: %w", describe(obj), err)
	}

	switch {
	case before == "":
		a.res.Created = append(a.res.Created, r.String())
		a.logf("created %s", logName(obj))
	case after.GetResourceVersion() != before:
		a.res.Updated = append(a.res.Updated, r.String())
		a.logf("updated %s", logName(obj))
	default:
		a.res.Unchanged = append(a.res.Unchanged, r.String())

		return r, nil
	}

	if isCRD(gvk) {
		a.crdsChanged = true
	}

	return r, nil
}

// mapping maps gvk, reading discovery again when a CRD created or updated
// in this run may have added the kind.
func (a *applier) mapping(ctx context.Context, gvk schema.GroupVersionKind) (mapping, error) {
	m, err := a.mapper.mapping(ctx, gvk)
	if meta.IsNoMatchError(err) && a.crdsChanged {
		a.mapper.reset()
		a.crdsChanged = false
		m, err = a.mapper.mapping(ctx, gvk)
	}

	return m, err
}

func (a *applier) client(m mapping, namespace string) dynamic.ResourceInterface {
	if m.namespaced {
		return a.dyn.Resource(m.resource).Namespace(namespace)
	}

	return a.dyn.Resource(m.resource)
}

// prepare returns the copy of obj to apply (the caller's manifests stay
// as rendered): the namespace defaulted to "default" for namespaced kinds
// and dropped for cluster-scoped ones, talosbox's label and annotation
// added, and a Secret's stringData moved into data.
func prepare(obj *unstructured.Unstructured, manifest string, namespaced bool) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopy()

	switch {
	case !namespaced:
		obj.SetNamespace("")
	case obj.GetNamespace() == "":
		obj.SetNamespace(metav1.NamespaceDefault)
	}

	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}

	labels[LabelManagedBy] = ValueManagedBy
	obj.SetLabels(labels)

	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}

	annotations[AnnotationManifest] = manifest
	obj.SetAnnotations(annotations)

	if gvk := obj.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Secret" {
		if err := foldStringData(obj); err != nil {
			return nil, err
		}
	}

	return obj, nil
}

// foldStringData moves a Secret's stringData into data, as the API server
// would on write. Applied as stringData, the keys would be owned under
// stringData, which is never stored, so a key removed from the manifest
// would stay in data forever (kubernetes/kubernetes#108008).
func foldStringData(obj *unstructured.Unstructured) error {
	sd, found, err := unstructured.NestedStringMap(obj.Object, "stringData")
	if err != nil {
		return fmt.Errorf("stringData: %w", err)
	}

	if !found {
		return nil
	}

	data, _, err := unstructured.NestedMap(obj.Object, "data")
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}

	if data == nil {
		data = map[string]any{}
	}

	// stringData wins over data, as the API server documents.
	for k, v := range sd {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}

	unstructured.RemoveNestedField(obj.Object, "stringData")

	return unstructured.SetNestedMap(obj.Object, data, "data")
}

func isCRD(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

func isNamespace(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "" && gvk.Kind == "Namespace"
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

// logName names an object as Talos's log lines do, without its namespace:
// group/version/Kind/name.
func logName(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()

	return fmt.Sprintf("%s/%s/%s/%s", gvk.Group, gvk.Version, gvk.Kind, obj.GetName())
}
