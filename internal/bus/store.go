package bus

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"time"
)

// StoreOptions tune a Store; the zero value gives the defaults.
type StoreOptions struct {
	// Clock stamps Created and Updated; time.Now by default.
	Clock func() time.Time
	// WatchQueue is how many undelivered events a watcher may hold before
	// it is failed with ErrWatchOverrun; 1024 by default.
	WatchQueue int
}

// DefaultWatchQueue is the per-watcher queue length when none is given.
const DefaultWatchQueue = 1024

// Store is the resource store. It is safe for concurrent use.
type Store struct {
	clock      func() time.Time
	watchQueue int

	mu      sync.RWMutex
	buckets map[Kind]*bucket
}

// bucket holds one Kind. Every write and every event delivery for the kind
// happens under its lock, which is what makes each watcher's event stream
// ordered by version without gaps.
type bucket struct {
	mu    sync.RWMutex
	items map[string]Resource
	subs  []*sub
}

// NewStore makes an empty store.
func NewStore(opts StoreOptions) *Store {
	s := &Store{clock: opts.Clock, watchQueue: opts.WatchQueue, buckets: map[Kind]*bucket{}}
	if s.clock == nil {
		s.clock = time.Now
	}

	if s.watchQueue <= 0 {
		s.watchQueue = DefaultWatchQueue
	}

	return s
}

func (s *Store) peek(k Kind) *bucket {
	s.mu.RLock()
	b := s.buckets[k]
	s.mu.RUnlock()

	return b
}

func (s *Store) bucket(k Kind) *bucket {
	if b := s.peek(k); b != nil {
		return b
	}

	s.mu.Lock()
	defer s.mu.Unlock()

	b := s.buckets[k]
	if b == nil {
		b = &bucket{items: map[string]Resource{}}
		s.buckets[k] = b
	}

	return b
}

// WriteOption changes how a write is done. Options pass their struct by
// value so that applying them allocates nothing on the write path.
type WriteOption func(writeOptions) writeOptions

type writeOptions struct {
	owner string
}

// WithOwner writes as owner. Only the owner recorded at creation may
// update, tear down or destroy a resource; the empty owner is an owner too.
func WithOwner(owner string) WriteOption {
	return func(o writeOptions) writeOptions {
		o.owner = owner
		return o
	}
}

func ownerOf(opts []WriteOption) string {
	var o writeOptions
	for _, opt := range opts {
		o = opt(o)
	}

	return o.owner
}

func validate(op string, md *Metadata) error {
	if md.Namespace == "" || md.Type == "" || md.ID == "" {
		return opError(op, md.Pointer(), ErrInvalid, "namespace, type and id must all be set")
	}

	return nil
}

// Get returns the current snapshot of the resource.
func (s *Store) Get(_ context.Context, p Pointer) (Resource, error) {
	b := s.peek(p.Kind())
	if b == nil {
		return nil, opError("get", p, ErrNotFound, "")
	}

	b.mu.RLock()
	r, ok := b.items[p.ID]
	b.mu.RUnlock()

	if !ok {
		return nil, opError("get", p, ErrNotFound, "")
	}

	return r, nil
}

// ListOption filters a List.
type ListOption func(*listOptions)

type listOptions struct {
	query *LabelQuery
}

// WithLabelQuery keeps only resources whose labels match q.
func WithLabelQuery(q LabelQuery) ListOption {
	return func(o *listOptions) { o.query = &q }
}

// List returns the snapshots of a kind, sorted by ID.
func (s *Store) List(_ context.Context, k Kind, opts ...ListOption) ([]Resource, error) {
	var o listOptions
	for _, opt := range opts {
		opt(&o)
	}

	b := s.peek(k)
	if b == nil {
		return nil, nil
	}

	b.mu.RLock()
	out := b.snapshot(o.query)
	b.mu.RUnlock()

	return out, nil
}

func (b *bucket) snapshot(q *LabelQuery) []Resource {
	out := make([]Resource, 0, len(b.items))
	for _, r := range b.items {
		if q == nil || q.Matches(r.Metadata().Labels) {
			out = append(out, r)
		}
	}

	slices.SortFunc(out, func(a, b Resource) int { return cmp.Compare(a.Metadata().ID, b.Metadata().ID) })

	return out
}

// Create stores a copy of r at version 1. r's metadata is updated to match.
func (s *Store) Create(_ context.Context, r Resource, opts ...WriteOption) error {
	return s.create(r, ownerOf(opts))
}

func (s *Store) create(r Resource, owner string) error {
	md := r.Metadata()
	if err := validate("create", md); err != nil {
		return err
	}

	c := r.DeepCopy()
	cm := c.Metadata()
	now := s.clock()
	b := s.bucket(md.Kind())

	b.mu.Lock()

	if _, ok := b.items[md.ID]; ok {
		b.mu.Unlock()
		return opError("create", md.Pointer(), ErrAlreadyExists, "")
	}

	cm.Version, cm.Owner, cm.Phase, cm.Created, cm.Updated, cm.Finalizers = 1, owner, PhaseRunning, now, now, Finalizers{}
	b.items[md.ID] = c
	b.publish(Event{Type: Created, Resource: c})

	b.mu.Unlock()

	*md = *cm

	return nil
}

// Update replaces the resource with a copy of r. r's Version must be the
// stored version (optimistic concurrency); the stored version is then one
// higher, and r's metadata is updated to match. Phase, owner and finalizers
// are kept from the stored resource: they change only through Teardown and
// the finalizer calls.
func (s *Store) Update(_ context.Context, r Resource, opts ...WriteOption) error {
	return s.update(r.DeepCopy(), r.Metadata(), ownerOf(opts))
}

// update stores c, which the store owns from now on, and mirrors the
// result into back (the caller's metadata) when it is not nil.
func (s *Store) update(c Resource, back *Metadata, owner string) error {
	cm := c.Metadata()
	if err := validate("update", cm); err != nil {
		return err
	}

	now := s.clock()

	b := s.peek(cm.Kind())
	if b == nil {
		return opError("update", cm.Pointer(), ErrNotFound, "")
	}

	b.mu.Lock()

	cur, ok := b.items[cm.ID]
	if !ok {
		b.mu.Unlock()
		return opError("update", cm.Pointer(), ErrNotFound, "")
	}

	curMd := cur.Metadata()
	if curMd.Owner != owner {
		b.mu.Unlock()
		return opError("update", cm.Pointer(), ErrOwnerConflict, "owned by %q, not %q", curMd.Owner, owner)
	}

	if cm.Version != curMd.Version {
		b.mu.Unlock()
		return opError("update", cm.Pointer(), ErrVersionConflict, "expected version %d, current version %d", cm.Version, curMd.Version)
	}

	cm.Version, cm.Owner, cm.Phase, cm.Created, cm.Updated, cm.Finalizers = curMd.Version+1, curMd.Owner, curMd.Phase, curMd.Created, now, curMd.Finalizers
	b.items[cm.ID] = c
	b.publish(Event{Type: Updated, Resource: c, Old: cur})

	b.mu.Unlock()

	if back != nil {
		*back = *cm
	}

	return nil
}

// Modify applies fn to a private copy of the current resource and stores
// the result; when the resource does not exist, fn gets a copy of r and the
// result is created. A concurrent write makes it start over with the newer
// version. Nothing is written when fn changes neither spec nor labels. It
// returns the stored snapshot.
func (s *Store) Modify(ctx context.Context, r Resource, fn func(Resource) error, opts ...WriteOption) (Resource, error) {
	return s.modify(ctx, r, fn, ownerOf(opts))
}

func (s *Store) modify(ctx context.Context, r Resource, fn func(Resource) error, owner string) (Resource, error) {
	p := r.Metadata().Pointer()

	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}

		cur, err := s.Get(ctx, p)
		if IsNotFound(err) {
			c := r.DeepCopy()
			if err := fn(c); err != nil {
				return nil, err
			}

			if c.Metadata().Pointer() != p {
				return nil, opError("modify", p, ErrInvalid, "the modify function changed the resource's namespace, type or id")
			}

			err = s.create(c, owner)
			if errors.Is(err, ErrAlreadyExists) {
				continue
			}

			return c, err
		}

		if curOwner := cur.Metadata().Owner; curOwner != owner {
			return nil, opError("modify", p, ErrOwnerConflict, "owned by %q, not %q", curOwner, owner)
		}

		c := cur.DeepCopy()
		if err := fn(c); err != nil {
			return nil, err
		}

		cm := c.Metadata()
		if cm.Pointer() != p {
			return nil, opError("modify", p, ErrInvalid, "the modify function changed the resource's namespace, type or id")
		}

		if cm.Labels.Equal(cur.Metadata().Labels) && reflect.DeepEqual(c.Spec(), cur.Spec()) {
			return cur, nil
		}

		cm.Version = cur.Metadata().Version

		err = s.update(c, nil, owner)
		if IsConflict(err) {
			continue
		}

		return c, err
	}
}

// Teardown moves the resource to PhaseTearingDown, telling consumers to let
// go. It reports whether no finalizers are left, so Destroy may proceed.
func (s *Store) Teardown(_ context.Context, p Pointer, opts ...WriteOption) (bool, error) {
	return s.teardown(p, ownerOf(opts))
}

func (s *Store) teardown(p Pointer, owner string) (bool, error) {
	b := s.peek(p.Kind())
	if b == nil {
		return false, opError("teardown", p, ErrNotFound, "")
	}

	now := s.clock()

	b.mu.Lock()
	defer b.mu.Unlock()

	cur, ok := b.items[p.ID]
	if !ok {
		return false, opError("teardown", p, ErrNotFound, "")
	}

	curMd := cur.Metadata()
	if curMd.Owner != owner {
		return false, opError("teardown", p, ErrOwnerConflict, "owned by %q, not %q", curMd.Owner, owner)
	}

	if curMd.Phase != PhaseTearingDown {
		c := cur.DeepCopy()
		cm := c.Metadata()
		cm.Phase, cm.Version, cm.Updated = PhaseTearingDown, curMd.Version+1, now
		b.items[p.ID] = c
		b.publish(Event{Type: Updated, Resource: c, Old: cur})
	}

	return curMd.Finalizers.Len() == 0, nil
}

// Destroy removes the resource. It fails while finalizers are present.
func (s *Store) Destroy(_ context.Context, p Pointer, opts ...WriteOption) error {
	return s.destroy(p, ownerOf(opts))
}

func (s *Store) destroy(p Pointer, owner string) error {
	b := s.peek(p.Kind())
	if b == nil {
		return opError("destroy", p, ErrNotFound, "")
	}

	b.mu.Lock()
	defer b.mu.Unlock()

	cur, ok := b.items[p.ID]
	if !ok {
		return opError("destroy", p, ErrNotFound, "")
	}

	curMd := cur.Metadata()
	if curMd.Owner != owner {
		return opError("destroy", p, ErrOwnerConflict, "owned by %q, not %q", curMd.Owner, owner)
	}

	if curMd.Finalizers.Len() > 0 {
		return opError("destroy", p, ErrPendingFinalizers, "%v", curMd.Finalizers.f)
	}

	delete(b.items, p.ID)
	b.publish(Event{Type: Destroyed, Resource: cur})

	return nil
}

// AddFinalizer records consumers of the resource; any writer may add one.
// A resource that is tearing down takes no new finalizers.
func (s *Store) AddFinalizer(_ context.Context, p Pointer, fins ...string) error {
	return s.changeFinalizers("add finalizer", p, func(md *Metadata) (Finalizers, bool, error) {
		if md.Phase == PhaseTearingDown {
			return Finalizers{}, false, opError("add finalizer", p, ErrPhaseConflict, "the resource is tearing down")
		}

		f, changed := md.Finalizers.add(fins...)

		return f, changed, nil
	})
}

// RemoveFinalizer releases consumers' hold on the resource.
func (s *Store) RemoveFinalizer(_ context.Context, p Pointer, fins ...string) error {
	return s.changeFinalizers("remove finalizer", p, func(md *Metadata) (Finalizers, bool, error) {
		f, changed := md.Finalizers.remove(fins...)

		return f, changed, nil
	})
}

func (s *Store) changeFinalizers(op string, p Pointer, change func(*Metadata) (Finalizers, bool, error)) error {
	b := s.peek(p.Kind())
	if b == nil {
		return opError(op, p, ErrNotFound, "")
	}

	now := s.clock()

	b.mu.Lock()
	defer b.mu.Unlock()

	cur, ok := b.items[p.ID]
	if !ok {
		return opError(op, p, ErrNotFound, "")
	}

	curMd := cur.Metadata()

	fins, changed, err := change(curMd)
	if err != nil || !changed {
		return err
	}

	c := cur.DeepCopy()
	cm := c.Metadata()
	cm.Finalizers, cm.Version, cm.Updated = fins, curMd.Version+1, now
	b.items[p.ID] = c
	b.publish(Event{Type: Updated, Resource: c, Old: cur})

	return nil
}
