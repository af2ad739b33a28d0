package bus

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Reader is the read half shared by Store and ControllerRuntime.
type Reader interface {
	Get(ctx context.Context, p Pointer) (Resource, error)
	List(ctx context.Context, k Kind, opts ...ListOption) ([]Resource, error)
}

// GetAs returns the resource as its concrete type T.
func GetAs[T Resource](ctx context.Context, r Reader, p Pointer) (T, error) {
	var zero T

	res, err := r.Get(ctx, p)
	if err != nil {
		return zero, err
	}

	t, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("get %s: stored as %T, not %T", p, res, zero)
	}

	return t, nil
}

// ListAs returns the resources of a kind as their concrete type T.
func ListAs[T Resource](ctx context.Context, r Reader, k Kind, opts ...ListOption) ([]T, error) {
	items, err := r.List(ctx, k, opts...)
	if err != nil {
		return nil, err
	}

	out := make([]T, 0, len(items))

	for _, res := range items {
		t, ok := res.(T)
		if !ok {
			var zero T
			return nil, fmt.Errorf("list %s: %s stored as %T, not %T", k, res.Metadata().ID, res, zero)
		}

		out = append(out, t)
	}

	return out, nil
}

// Modifier is the write half that supports Modify.
type Modifier interface {
	Modify(ctx context.Context, r Resource, fn func(Resource) error) (Resource, error)
}

// ModifyAs is Modify with a typed callback.
func ModifyAs[T Resource](ctx context.Context, w Modifier, r T, fn func(T) error) (T, error) {
	var zero T

	res, err := w.Modify(ctx, r, func(res Resource) error {
		t, ok := res.(T)
		if !ok {
			return fmt.Errorf("modify %s: stored as %T, not %T", res.Metadata().Pointer(), res, zero)
		}

		return fn(t)
	})
	if err != nil {
		return zero, err
	}

	return res.(T), nil //nolint:forcetypeassert // checked in the callback or created from r
}

// Syncer is what SyncOutputs needs: a controller's runtime, or a store
// wrapped with an owner.
type Syncer interface {
	Modifier
	List(ctx context.Context, k Kind, opts ...ListOption) ([]Resource, error)
	Destroy(ctx context.Context, p Pointer) error
}

// SyncOutputs makes the resources of (ns, typ) owned by owner exactly
// want (id -> spec): it writes what changed and destroys the rest.
// Resources of the type owned by others are left alone.
func SyncOutputs[S any](ctx context.Context, r Syncer, owner, ns, typ string, want map[string]S) error {
	for _, id := range slices.Sorted(maps.Keys(want)) {
		spec := want[id]

		if _, err := ModifyAs(ctx, r, NewTyped(ns, typ, id, spec), func(res *Typed[S]) error {
			*res.TypedSpec() = spec
			return nil
		}); err != nil {
			return fmt.Errorf("write %s %s: %w", typ, id, err)
		}
	}

	have, err := r.List(ctx, Kind{Namespace: ns, Type: typ})
	if err != nil {
		return fmt.Errorf("list %s: %w", typ, err)
	}

	for _, res := range have {
		md := res.Metadata()
		if _, ok := want[md.ID]; ok || md.Owner != owner {
			continue
		}

		if err := r.Destroy(ctx, md.Pointer()); err != nil && !IsNotFound(err) {
			return fmt.Errorf("remove %s %s: %w", typ, md.ID, err)
		}
	}

	return nil
}
