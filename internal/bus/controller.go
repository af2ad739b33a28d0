package bus

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
)

// InputKind says how a controller depends on an input.
type InputKind uint8

const (
	// InputWeak: changes wake the controller.
	InputWeak InputKind = iota
	// InputStrong: changes wake the controller, and it may hold the input
	// back from destruction with finalizers.
	InputStrong
)

// Input is a kind (or one resource, when ID is set) a controller reads.
type Input struct {
	Namespace string
	Type      string
	ID        string
	Kind      InputKind
}

// OutputKind says whether a controller is the only writer of a type.
type OutputKind uint8

const (
	// OutputExclusive: no other controller may declare this type.
	OutputExclusive OutputKind = iota
	// OutputShared: several controllers write the type, each owning the
	// resources it created.
	OutputShared
)

// Output is a type a controller writes.
type Output struct {
	Type string
	Kind OutputKind
}

// Controller reconciles outputs from inputs. Run loops until ctx ends,
// waking on r.EventCh(); returning an error (or panicking) makes the
// runtime restart it with backoff.
type Controller interface {
	Name() string
	Inputs() []Input
	Outputs() []Output
	Run(ctx context.Context, r ControllerRuntime) error
}

// ControllerRuntime is a controller's view of the bus: reads limited to
// its inputs and outputs, writes limited to its outputs and made as its
// owner.
type ControllerRuntime interface {
	// EventCh receives a (coalesced) signal whenever an input changed.
	EventCh() <-chan struct{}
	// QueueReconcile makes EventCh fire once more.
	QueueReconcile()
	// ResetRestartBackoff tells the runtime the controller is healthy, so
	// the next failure restarts it after the shortest delay.
	ResetRestartBackoff()
	Logger() *slog.Logger

	Get(ctx context.Context, p Pointer) (Resource, error)
	List(ctx context.Context, k Kind, opts ...ListOption) ([]Resource, error)

	Create(ctx context.Context, r Resource) error
	Update(ctx context.Context, r Resource) error
	Modify(ctx context.Context, r Resource, fn func(Resource) error) (Resource, error)
	Teardown(ctx context.Context, p Pointer) (bool, error)
	Destroy(ctx context.Context, p Pointer) error
	AddFinalizer(ctx context.Context, p Pointer, fins ...string) error
	RemoveFinalizer(ctx context.Context, p Pointer, fins ...string) error
}

// adapter implements ControllerRuntime for one controller.
type adapter struct {
	store   *Store
	name    string
	inputs  []Input
	outputs []Output
	events  chan struct{}
	reset   atomic.Bool
	log     *slog.Logger
}

var _ ControllerRuntime = (*adapter)(nil)

func (a *adapter) EventCh() <-chan struct{} { return a.events }

func (a *adapter) QueueReconcile() {
	select {
	case a.events <- struct{}{}:
	default:
	}
}

func (a *adapter) ResetRestartBackoff() { a.reset.Store(true) }

func (a *adapter) Logger() *slog.Logger { return a.log }

func (a *adapter) input(k Kind) (Input, bool) {
	i := slices.IndexFunc(a.inputs, func(in Input) bool { return in.Namespace == k.Namespace && in.Type == k.Type })
	if i < 0 {
		return Input{}, false
	}

	return a.inputs[i], true
}

func (a *adapter) isOutput(typ string) bool {
	return slices.ContainsFunc(a.outputs, func(o Output) bool { return o.Type == typ })
}

func (a *adapter) checkRead(op string, k Kind) error {
	if _, ok := a.input(k); ok || a.isOutput(k.Type) {
		return nil
	}

	return &Error{Op: op, Target: k.String(), Err: ErrNotDeclared, Detail: fmt.Sprintf("controller %q does not declare it as an input or output", a.name)}
}

func (a *adapter) checkWrite(op string, p Pointer) error {
	if a.isOutput(p.Type) {
		return nil
	}

	return opError(op, p, ErrNotDeclared, "controller %q does not declare %s as an output", a.name, p.Type)
}

func (a *adapter) checkStrong(op string, p Pointer) error {
	if in, ok := a.input(p.Kind()); ok && in.Kind == InputStrong {
		return nil
	}

	return opError(op, p, ErrNotDeclared, "controller %q may only put finalizers on its strong inputs", a.name)
}

func (a *adapter) Get(ctx context.Context, p Pointer) (Resource, error) {
	if err := a.checkRead("get", p.Kind()); err != nil {
		return nil, err
	}

	return a.store.Get(ctx, p)
}

func (a *adapter) List(ctx context.Context, k Kind, opts ...ListOption) ([]Resource, error) {
	if err := a.checkRead("list", k); err != nil {
		return nil, err
	}

	return a.store.List(ctx, k, opts...)
}

func (a *adapter) Create(_ context.Context, r Resource) error {
	if err := a.checkWrite("create", r.Metadata().Pointer()); err != nil {
		return err
	}

	return a.store.create(r, a.name)
}

func (a *adapter) Update(_ context.Context, r Resource) error {
	if err := a.checkWrite("update", r.Metadata().Pointer()); err != nil {
		return err
	}

	return a.store.update(r.DeepCopy(), r.Metadata(), a.name)
}

func (a *adapter) Modify(ctx context.Context, r Resource, fn func(Resource) error) (Resource, error) {
	if err := a.checkWrite("modify", r.Metadata().Pointer()); err != nil {
		return nil, err
	}

	return a.store.modify(ctx, r, fn, a.name)
}

func (a *adapter) Teardown(_ context.Context, p Pointer) (bool, error) {
	if err := a.checkWrite("teardown", p); err != nil {
		return false, err
	}

	return a.store.teardown(p, a.name)
}

func (a *adapter) Destroy(_ context.Context, p Pointer) error {
	if err := a.checkWrite("destroy", p); err != nil {
		return err
	}

	return a.store.destroy(p, a.name)
}

func (a *adapter) AddFinalizer(ctx context.Context, p Pointer, fins ...string) error {
	if err := a.checkStrong("add finalizer", p); err != nil {
		return err
	}

	return a.store.AddFinalizer(ctx, p, fins...)
}

func (a *adapter) RemoveFinalizer(ctx context.Context, p Pointer, fins ...string) error {
	if err := a.checkStrong("remove finalizer", p); err != nil {
		return err
	}

	return a.store.RemoveFinalizer(ctx, p, fins...)
}
