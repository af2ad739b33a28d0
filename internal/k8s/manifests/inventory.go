package manifests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The inventory is the ConfigMap listing every object talosbox applied and
// has not seen go: the candidates for pruning. A list in the cluster,
// rather than a search by label, because finding labelled objects means
// one LIST per resource type the API server serves (dozens of requests a
// run, and list rights on everything), while the inventory is one GET and
// at most one apply; and rather than a node-local file, because it survives
// a reinstall and every control plane reads and writes the same one under
// the apply mutex. Losing it only loses pruning: objects it listed keep
// their label, so they can still be found and deleted by hand.
const (
	InventoryNamespace = "kube-system"
	InventoryName      = "talosbox-manifests"
	inventoryKey       = "objects"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// ref names one object talosbox applied, and the manifest it came from.
type ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Manifest   string `json:"manifest,omitempty"`
}

func refOf(obj *unstructured.Unstructured, manifest string) ref {
	return ref{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Manifest: manifest}
}

func (r ref) gvk() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
}

// key identifies the object whatever version it is served as, so that a
// manifest moving to a newer apiVersion still holds it.
func (r ref) key() string {
	return r.gvk().Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// looseKey leaves out the namespace, for objects whose kind could not be
// mapped (so whose namespace is not known for sure).
func (r ref) looseKey() string { return r.gvk().Group + "/" + r.Kind + "/" + r.Name }

// String is how ManifestStatus lists objects: "Kind namespace/name".
func (r ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}

	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// wanted are the objects the current manifests hold.
type wanted struct {
	keys    map[string]bool
	loose   map[string]bool // looseKeys of objects that could not be mapped
	hold    map[string]bool // manifest IDs whose objects are all wanted
	applied []ref           // what to record in the inventory
}

func newWanted(hold []string) *wanted {
	w := &wanted{keys: map[string]bool{}, loose: map[string]bool{}, hold: map[string]bool{}}
	for _, id := range hold {
		w.hold[id] = true
	}

	return w
}

// add records an object of the manifests: r is its reference once mapped
// (zero otherwise), ok says it was applied.
func (w *wanted) add(obj *unstructured.Unstructured, r ref, ok bool) {
	if r.Name == "" {
		w.loose[refOf(obj, "").looseKey()] = true

		return
	}

	w.keys[r.key()] = true
	if ok {
		w.applied = append(w.applied, r)
	}
}

func (w *wanted) has(r ref) bool {
	return w.keys[r.key()] || w.loose[r.looseKey()] || w.hold[r.Manifest]
}

// inventory is the ConfigMap's list, by key.
type inventory struct {
	refs map[string]ref
	text string // as read, to skip a write that changes nothing
}

// syncMode says what sync does with the objects no manifest holds.
type syncMode int

const (
	// syncRecord leaves them alone: the run stopped before it saw every
	// object of the manifests, so which they are is not known.
	syncRecord syncMode = iota
	syncKeep
	syncPrune
)

// sync records the objects applied in the inventory, then looks at every
// object it lists that no manifest holds: gone ones (deleted, or their
// label removed) are dropped from it, the rest are pruned or kept as mode
// says.
func (a *applier) sync(ctx context.Context, w *wanted, mode syncMode) error {
	inv, err := a.readInventory(ctx)
	if err != nil {
		return err
	}

	for _, r := range w.applied {
		inv.refs[r.key()] = r // the latest version and manifest
	}

	if mode == syncRecord {
		return a.writeInventory(ctx, inv)
	}

	var errs []error

	for _, k := range slices.Sorted(maps.Keys(inv.refs)) {
		r := inv.refs[k]
		if w.has(r) {
			continue
		}

		stays, err := a.retire(ctx, r, mode == syncPrune)
		if err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", r, err))
		}

		if !stays {
			delete(inv.refs, k)
		}
	}

	return errors.Join(append(errs, a.writeInventory(ctx, inv))...)
}

// retire deals with r, an object of ours no manifest holds: it deletes it
// when prune is set and r is neither a Namespace nor a CRD, and otherwise
// reports it kept. stays says r stays in the inventory.
func (a *applier) retire(ctx context.Context, r ref, del bool) (stays bool, err error) {
	gvk := r.gvk()

	m, err := a.mapping(ctx, gvk)

	switch {
	case meta.IsNoMatchError(err):
		// No object can be of a kind the API server does not serve.
		a.logf("forgetting %s: its kind is not served", r)

		return false, nil
	case err != nil:
		return true, err
	}

	client := a.client(m, r.Namespace)

	live, err := client.Get(ctx, r.Name, metav1.GetOptions{})

	switch {
	case apierrors.IsNotFound(err):
		return false, nil // deleted by someone else
	case err != nil:
		return true, fmt.Errorf("get: %w", err)
	case live.GetLabels()[LabelManagedBy] != ValueManagedBy:
		a.logf("forgetting %s: it no longer carries %s=%s", r, LabelManagedBy, ValueManagedBy)

		return false, nil
	}

	if !del || isNamespace(gvk) || isCRD(gvk) {
		a.res.Kept = append(a.res.Kept, r.String())

		return true, nil
	}

	// The UID precondition spares an object deleted and created again
	// since the GET; dependents (a Deployment's ReplicaSets) go too.
	uid := types.UID(live.GetUID())
	background := metav1.DeletePropagationBackground

	err = client.Delete(ctx, r.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &background,
	})

	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil // gone, or replaced by another object
	case err != nil:
		return true, fmt.Errorf("delete: %w", err)
	}

	a.res.Pruned = append(a.res.Pruned, r.String())
	a.logf("pruned %s/%s/%s/%s", gvk.Group, gvk.Version, gvk.Kind, r.Name)

	return false, nil
}

func (a *applier) readInventory(ctx context.Context) (*inventory, error) {
	inv := &inventory{refs: map[string]ref{}}

	cm, err := a.dyn.Resource(configMaps).Namespace(InventoryNamespace).Get(ctx, a.inventory, metav1.GetOptions{})

	switch {
	case apierrors.IsNotFound(err):
		return inv, nil
	case err != nil:
		return nil, fmt.Errorf("inventory %s/%s: %w", InventoryNamespace, a.inventory, err)
	}

	inv.text, _, _ = unstructured.NestedString(cm.Object, "data", inventoryKey)
	if inv.text == "" {
		return inv, nil
	}

	var refs []ref
	if err := json.Unmarshal([]byte(inv.text), &refs); err != nil {
		// Failing every apply over it would be worse: start afresh,
		// and what it listed is no longer pruned.
		a.logf("inventory %s/%s is unreadable, starting a new one: %v", InventoryNamespace, a.inventory, err)

		return inv, nil
	}

	for _, r := range refs {
		inv.refs[r.key()] = r
	}

	return inv, nil
}

// encode writes one object a line, in key order, for readable diffs.
func (inv *inventory) encode() (string, error) {
	var sb strings.Builder

	sb.WriteString("[")

	for i, k := range slices.Sorted(maps.Keys(inv.refs)) {
		line, err := json.Marshal(inv.refs[k])
		if err != nil {
			return "", fmt.Errorf("inventory: %w", err)
		}

		if i > 0 {
			sb.WriteString(",")
		}

		sb.WriteString("\n")
		sb.Write(line)
	}

	sb.WriteString("\n]\n")

	return sb.String(), nil
}

func (a *applier) writeInventory(ctx context.Context, inv *inventory) error {
	if len(inv.refs) == 0 && inv.text == "" {
		return nil // nothing to record, and no inventory yet
	}

	text, err := inv.encode()
	if err != nil || text == inv.text {
		return err
	}

	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata": map[string]any{
			"name":      a.inventory,
			"namespace": InventoryNamespace,
			"labels":    map[string]any{LabelManagedBy: ValueManagedBy},
		},
		"data": map[string]any{inventoryKey: text},
	}}

	if _, err := a.dyn.Resource(configMaps).Namespace(InventoryNamespace).Apply(ctx, a.inventory, cm,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("inventory %s/%s: %w", InventoryNamespace, a.inventory, err)
	}

	return nil
}
