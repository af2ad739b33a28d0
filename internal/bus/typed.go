package bus

import (
	"context"
	"fmt"
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
