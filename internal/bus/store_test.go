package bus_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
)

func TestCreateGetUpdateDestroy(t *testing.T) {
	ctx := testCtx(t)
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := bus.NewStore(bus.StoreOptions{Clock: func() time.Time { clock = clock.Add(time.Second); return clock }})

	r := newRes("a", 1)
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}

	if r.Metadata().Version != 1 {
		t.Fatalf("caller's version after create = %d, want 1", r.Metadata().Version)
	}

	// The store keeps its own copy: changing ours must not leak in.
	r.TypedSpec().Value = 99

	got, err := s.Get(ctx, ptr("a"))
	if err != nil {
		t.Fatal(err)
	}

	if value(got) != 1 || got.Metadata().Version != 1 {
		t.Fatalf("stored = %d@v%d, want 1@v1", value(got), got.Metadata().Version)
	}

	created := got.Metadata().Created

	r.TypedSpec().Value = 2
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}

	got, _ = s.Get(ctx, ptr("a"))
	if value(got) != 2 || got.Metadata().Version != 2 || r.Metadata().Version != 2 {
		t.Fatalf("after update: stored %d@v%d, caller v%d", value(got), got.Metadata().Version, r.Metadata().Version)
	}

	if !got.Metadata().Created.Equal(created) || !got.Metadata().Updated.After(created) {
		t.Fatalf("timestamps: created %v (was %v), updated %v", got.Metadata().Created, created, got.Metadata().Updated)
	}

	if err := s.Destroy(ctx, ptr("a")); err != nil {
		t.Fatal(err)
	}

	if _, err := s.Get(ctx, ptr("a")); !bus.IsNotFound(err) {
		t.Fatalf("get after destroy: %v, want not found", err)
	}
}

func TestWriteErrors(t *testing.T) {
	ctx := testCtx(t)

	tests := []struct {
		name string
		op   func(s *bus.Store) error
		want error
		msg  string
	}{
		{"create twice", func(s *bus.Store) error { return s.Create(ctx, newRes("a", 1)) }, bus.ErrAlreadyExists,
			"create test/Things.test.talos.dev/a: already exists"},
		{"create without id", func(s *bus.Store) error { return s.Create(ctx, bus.NewTyped(ns, typ, "", spec{})) }, bus.ErrInvalid,
			"create test/Things.test.talos.dev/: invalid request: namespace, type and id must all be set"},
		{"update missing", func(s *bus.Store) error { return s.Update(ctx, newRes("zz", 1)) }, bus.ErrNotFound,
			"update test/Things.test.talos.dev/zz: not found"},
		{"update stale version", func(s *bus.Store) error {
			r := newRes("a", 5)
			r.Metadata().Version = 0
			return s.Update(ctx, r, bus.WithOwner("owner-1"))
		}, bus.ErrVersionConflict, "update test/Things.test.talos.dev/a: version conflict: expected version 0, current version 1"},
		{"update as another owner", func(s *bus.Store) error {
			r := newRes("a", 5)
			r.Metadata().Version = 1
			return s.Update(ctx, r, bus.WithOwner("intruder"))
		}, bus.ErrOwnerConflict, `update test/Things.test.talos.dev/a: owner conflict: owned by "owner-1", not "intruder"`},
		{"update without owner", func(s *bus.Store) error {
			r := newRes("a", 5)
			r.Metadata().Version = 1
			return s.Update(ctx, r)
		}, bus.ErrOwnerConflict, `update test/Things.test.talos.dev/a: owner conflict: owned by "owner-1", not ""`},
		{"destroy as another owner", func(s *bus.Store) error { return s.Destroy(ctx, ptr("a")) }, bus.ErrOwnerConflict,
			`destroy test/Things.test.talos.dev/a: owner conflict: owned by "owner-1", not ""`},
		{"teardown as another owner", func(s *bus.Store) error { _, err := s.Teardown(ctx, ptr("a"), bus.WithOwner("x")); return err },
			bus.ErrOwnerConflict, `teardown test/Things.test.talos.dev/a: owner conflict: owned by "owner-1", not "x"`},
		{"modify as another owner", func(s *bus.Store) error {
			_, err := s.Modify(ctx, newRes("a", 0), func(bus.Resource) error { return nil }, bus.WithOwner("x"))
			return err
		}, bus.ErrOwnerConflict, `modify test/Things.test.talos.dev/a: owner conflict: owned by "owner-1", not "x"`},
		{"destroy missing", func(s *bus.Store) error { return s.Destroy(ctx, ptr("nope")) }, bus.ErrNotFound,
			"destroy test/Things.test.talos.dev/nope: not found"},
		{"finalizer on missing", func(s *bus.Store) error { return s.AddFinalizer(ctx, ptr("nope"), "f") }, bus.ErrNotFound,
			"add finalizer test/Things.test.talos.dev/nope: not found"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := bus.NewStore(bus.StoreOptions{})
			if err := s.Create(ctx, newRes("a", 1), bus.WithOwner("owner-1")); err != nil {
				t.Fatal(err)
			}

			err := tt.op(s)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}

			if err.Error() != tt.msg {
				t.Fatalf("message:\n got %s\nwant %s", err, tt.msg)
			}

			// A failed write leaves the stored resource untouched.
			got, err := s.Get(ctx, ptr("a"))
			if err != nil || value(got) != 1 || got.Metadata().Version != 1 {
				t.Fatalf("stored resource changed: %v %+v", err, got)
			}
		})
	}
}

func TestConcurrentUpdatesConflict(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	if err := s.Create(ctx, newRes("a", 0)); err != nil {
		t.Fatal(err)
	}

	// Every writer reads version 1 and tries to write it: exactly one wins.
	const writers = 16

	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		ok, confl int
	)

	base, _ := s.Get(ctx, ptr("a"))

	for i := range writers {
		wg.Go(func() {
			r := base.DeepCopy().(*res)
			r.TypedSpec().Value = i + 1
			err := s.Update(ctx, r)

			mu.Lock()
			defer mu.Unlock()

			switch {
			case err == nil:
				ok++
			case bus.IsConflict(err):
				confl++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}

	wg.Wait()

	if ok != 1 || confl != writers-1 {
		t.Fatalf("winners=%d conflicts=%d, want 1 and %d", ok, confl, writers-1)
	}
}

func TestModifyRetriesUntilAllIncrementsLand(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	const workers, each = 8, 200

	var wg sync.WaitGroup

	for range workers {
		wg.Go(func() {
			for range each {
				_, err := bus.ModifyAs(ctx, ownerless{s}, newRes("counter", 0), func(r *res) error {
					r.TypedSpec().Value++
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}

	wg.Wait()

	got, err := s.Get(ctx, ptr("counter"))
	if err != nil {
		t.Fatal(err)
	}

	// Created at value 1 by the first Modify, then one version per increment.
	if value(got) != workers*each || got.Metadata().Version != workers*each {
		t.Fatalf("counter = %d@v%d, want %d@v%d", value(got), got.Metadata().Version, workers*each, workers*each)
	}
}

// ownerless adapts Store to bus.Modifier for writes with the empty owner.
type ownerless struct{ s *bus.Store }

func (o ownerless) Modify(ctx context.Context, r bus.Resource, fn func(bus.Resource) error) (bus.Resource, error) {
	return o.s.Modify(ctx, r, fn)
}

func TestModifyWithoutChangeWritesNothing(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	if err := s.Create(ctx, newRes("a", 7)); err != nil {
		t.Fatal(err)
	}

	got, err := s.Modify(ctx, newRes("a", 0), func(r bus.Resource) error {
		r.(*res).TypedSpec().Value = 7
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if got.Metadata().Version != 1 {
		t.Fatalf("version = %d after a no-op modify, want 1", got.Metadata().Version)
	}

	wantErr := errors.New("refused")
	if _, err := s.Modify(ctx, newRes("a", 0), func(bus.Resource) error { return wantErr }); !errors.Is(err, wantErr) {
		t.Fatalf("modify error = %v, want the callback's error", err)
	}
}

func TestDeepCopyIsolatesSlices(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	r := newRes("a", 1)
	r.TypedSpec().Tags = []string{"x"}

	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}

	r.TypedSpec().Tags[0] = "mutated"

	got, _ := s.Get(ctx, ptr("a"))
	if tags := got.(*res).TypedSpec().Tags; tags[0] != "x" {
		t.Fatalf("stored tags = %v: the store shares the caller's slice", tags)
	}
}

func TestFinalizersBlockDestroyAndTeardownFlow(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})
	owner := bus.WithOwner("producer")

	if err := s.Create(ctx, newRes("a", 1), owner); err != nil {
		t.Fatal(err)
	}

	if err := s.AddFinalizer(ctx, ptr("a"), "consumer-1", "consumer-2"); err != nil {
		t.Fatal(err)
	}

	err := s.Destroy(ctx, ptr("a"), owner)
	if !errors.Is(err, bus.ErrPendingFinalizers) || err.Error() != "destroy test/Things.test.talos.dev/a: finalizers pending: [consumer-1 consumer-2]" {
		t.Fatalf("destroy with finalizers: %v", err)
	}

	ready, err := s.Teardown(ctx, ptr("a"), owner)
	if err != nil || ready {
		t.Fatalf("teardown = %v, %v; want not ready", ready, err)
	}

	got, _ := s.Get(ctx, ptr("a"))
	if got.Metadata().Phase != bus.PhaseTearingDown {
		t.Fatalf("phase = %v, want tearingDown", got.Metadata().Phase)
	}

	// Updates by the owner keep the phase; new finalizers are refused.
	r := got.DeepCopy().(*res)
	r.TypedSpec().Value = 2

	if err := s.Update(ctx, r, owner); err != nil {
		t.Fatal(err)
	}

	if got, _ := s.Get(ctx, ptr("a")); got.Metadata().Phase != bus.PhaseTearingDown {
		t.Fatal("update brought the resource back to running")
	}

	if err := s.AddFinalizer(ctx, ptr("a"), "late"); !errors.Is(err, bus.ErrPhaseConflict) {
		t.Fatalf("add finalizer while tearing down: %v, want phase conflict", err)
	}

	for _, fin := range []string{"consumer-1", "consumer-2"} {
		if err := s.RemoveFinalizer(ctx, ptr("a"), fin); err != nil {
			t.Fatal(err)
		}
	}

	if ready, err := s.Teardown(ctx, ptr("a"), owner); err != nil || !ready {
		t.Fatalf("teardown after release = %v, %v; want ready", ready, err)
	}

	if err := s.Destroy(ctx, ptr("a"), owner); err != nil {
		t.Fatal(err)
	}
}

func TestListSortedAndFilteredByLabels(t *testing.T) {
	ctx := testCtx(t)
	s := bus.NewStore(bus.StoreOptions{})

	for i, id := range []string{"c", "a", "b", "d"} {
		r := newRes(id, i)
		if id != "d" {
			r.Metadata().Labels.Set("role", map[string]string{"a": "cp", "b": "worker", "c": "cp"}[id])
		}

		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		selector string
		want     []string
	}{
		{"", []string{"a", "b", "c", "d"}},
		{"role=cp", []string{"a", "c"}},
		{"role!=cp", []string{"b", "d"}},
		{"role", []string{"a", "b", "c"}},
		{"!role", []string{"d"}},
		{"role in (worker, cp)", []string{"a", "b", "c"}},
	}

	for _, tt := range tests {
		q, err := bus.ParseLabelQuery(tt.selector)
		if err != nil {
			t.Fatal(err)
		}

		items, _ := s.List(ctx, kind, bus.WithLabelQuery(q))

		var ids []string
		for _, r := range items {
			ids = append(ids, r.Metadata().ID)
		}

		if !equal(ids, tt.want) {
			t.Errorf("%q: got %v, want %v", tt.selector, ids, tt.want)
		}
	}

	if _, err := bus.ParseLabelQuery("role in cp"); err == nil {
		t.Error("a malformed 'in' selector parsed")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}

	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}

	return true
}
