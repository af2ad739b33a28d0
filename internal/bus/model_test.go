package bus_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/internal/bus"
)

// The reference model: a plain map with the store's rules written out as
// simply as possible. Random operation sequences must give the same results
// and states on both.
type modelRes struct {
	value   int
	version uint64
	owner   string
	phase   bus.Phase
	fins    []string
}

type model map[string]*modelRes

var (
	modelIDs    = []string{"a", "b", "c"}
	modelOwners = []string{"", "o1", "o2"}
	modelFins   = []string{"f1", "f2"}
)

func (m model) create(id, owner string, v int) error {
	if _, ok := m[id]; ok {
		return bus.ErrAlreadyExists
	}

	m[id] = &modelRes{value: v, version: 1, owner: owner}

	return nil
}

func (m model) owned(id, owner string) (*modelRes, error) {
	r, ok := m[id]

	switch {
	case !ok:
		return nil, bus.ErrNotFound
	case r.owner != owner:
		return nil, bus.ErrOwnerConflict
	}

	return r, nil
}

func (m model) update(id, owner string, v int, version uint64) error {
	r, err := m.owned(id, owner)
	if err != nil {
		return err
	}

	if version != r.version {
		return bus.ErrVersionConflict
	}

	r.value, r.version = v, r.version+1

	return nil
}

func (m model) modify(id, owner string, v int) error {
	if _, ok := m[id]; !ok {
		return m.create(id, owner, v)
	}

	r, err := m.owned(id, owner)
	if err != nil || r.value == v {
		return err
	}

	r.value, r.version = v, r.version+1

	return nil
}

func (m model) teardown(id, owner string) (bool, error) {
	r, err := m.owned(id, owner)
	if err != nil {
		return false, err
	}

	if r.phase != bus.PhaseTearingDown {
		r.phase, r.version = bus.PhaseTearingDown, r.version+1
	}

	return len(r.fins) == 0, nil
}

func (m model) destroy(id, owner string) error {
	r, err := m.owned(id, owner)
	if err != nil {
		return err
	}

	if len(r.fins) > 0 {
		return bus.ErrPendingFinalizers
	}

	delete(m, id)

	return nil
}

func (m model) addFinalizer(id, fin string) error {
	r, ok := m[id]

	switch {
	case !ok:
		return bus.ErrNotFound
	case r.phase == bus.PhaseTearingDown:
		return bus.ErrPhaseConflict
	case !slices.Contains(r.fins, fin):
		r.fins = append(r.fins, fin)
		r.version++
	}

	return nil
}

func (m model) removeFinalizer(id, fin string) error {
	r, ok := m[id]
	if !ok {
		return bus.ErrNotFound
	}

	if i := slices.Index(r.fins, fin); i >= 0 {
		r.fins = slices.Delete(r.fins, i, i+1)
		r.version++
	}

	return nil
}

var sentinels = []error{bus.ErrNotFound, bus.ErrAlreadyExists, bus.ErrVersionConflict, bus.ErrOwnerConflict, bus.ErrPhaseConflict, bus.ErrPendingFinalizers}

func sameError(got, want error) bool {
	if want == nil || got == nil {
		return got == nil && want == nil
	}

	for _, s := range sentinels {
		if errors.Is(want, s) {
			return errors.Is(got, s)
		}
	}

	return false
}

// runModel interprets data as operations, 4 bytes each, and checks the
// store against the model after every one of them.
func runModel(t *testing.T, data []byte) {
	ctx := context.Background()
	s := bus.NewStore(bus.StoreOptions{WatchQueue: len(data) + 16})
	m := model{}

	w, err := s.WatchKind(ctx, kind)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	for i := 0; i+4 <= len(data); i += 4 {
		op, id, owner, v := data[i]%9, modelIDs[int(data[i+1])%len(modelIDs)], modelOwners[int(data[i+2])%len(modelOwners)], int(data[i+3])
		fin := modelFins[v%len(modelFins)]

		var (
			got, want         error
			gotReady, wantRdy bool
			desc              string
		)

		switch op {
		case 0:
			desc = fmt.Sprintf("create %s owner=%q v=%d", id, owner, v)
			got, want = s.Create(ctx, newRes(id, v), bus.WithOwner(owner)), m.create(id, owner, v)
		case 1, 2:
			var version uint64
			if r, ok := m[id]; ok {
				version = r.version
			}

			if op == 2 { // a stale or future version
				version += uint64(v%3) - 1
			}

			desc = fmt.Sprintf("update %s owner=%q v=%d version=%d", id, owner, v, version)
			r := newRes(id, v)
			r.Metadata().Version = version
			got, want = s.Update(ctx, r, bus.WithOwner(owner)), m.update(id, owner, v, version)
		case 3:
			desc = fmt.Sprintf("modify %s owner=%q v=%d", id, owner, v)
			_, got = s.Modify(ctx, newRes(id, 0), func(r bus.Resource) error {
				r.(*res).TypedSpec().Value = v
				return nil
			}, bus.WithOwner(owner))
			want = m.modify(id, owner, v)
		case 4:
			desc = fmt.Sprintf("teardown %s owner=%q", id, owner)
			gotReady, got = s.Teardown(ctx, ptr(id), bus.WithOwner(owner))
			wantRdy, want = m.teardown(id, owner)
		case 5:
			desc = fmt.Sprintf("destroy %s owner=%q", id, owner)
			got, want = s.Destroy(ctx, ptr(id), bus.WithOwner(owner)), m.destroy(id, owner)
		case 6, 7:
			desc = fmt.Sprintf("add finalizer %s %s", id, fin)
			got, want = s.AddFinalizer(ctx, ptr(id), fin), m.addFinalizer(id, fin)
		case 8:
			desc = fmt.Sprintf("remove finalizer %s %s", id, fin)
			got, want = s.RemoveFinalizer(ctx, ptr(id), fin), m.removeFinalizer(id, fin)
		}

		if !sameError(got, want) || gotReady != wantRdy {
			t.Fatalf("op %d (%s): store said %v (ready %v), model %v (ready %v)", i/4, desc, got, gotReady, want, wantRdy)
		}

		if err := compare(ctx, s, m); err != nil {
			t.Fatalf("op %d (%s): %v", i/4, desc, err)
		}
	}

	// Replaying the watch must rebuild exactly the store's state.
	replayed := map[string]bus.Resource{}

	for done := false; !done; {
		select {
		case ev := <-w.Events():
			switch ev.Type {
			case bus.Created, bus.Updated:
				replayed[ev.Resource.Metadata().ID] = ev.Resource
			case bus.Destroyed:
				delete(replayed, ev.Resource.Metadata().ID)
			case bus.Errored:
				t.Fatal(ev.Err)
			}
		default:
			done = true
		}
	}

	items, _ := s.List(ctx, kind)
	if len(items) != len(replayed) {
		t.Fatalf("watch replay has %d resources, store %d", len(replayed), len(items))
	}

	for _, r := range items {
		if rep := replayed[r.Metadata().ID]; rep != r {
			t.Fatalf("watch replay of %s differs from the store", r.Metadata().ID)
		}
	}
}

func compare(ctx context.Context, s *bus.Store, m model) error {
	items, err := s.List(ctx, kind)
	if err != nil {
		return err
	}

	if len(items) != len(m) {
		return fmt.Errorf("store has %d resources, model %d", len(items), len(m))
	}

	for _, r := range items {
		md := r.Metadata()

		want, ok := m[md.ID]
		if !ok {
			return fmt.Errorf("store has %s, model does not", md.ID)
		}

		if value(r) != want.value || md.Version != want.version || md.Owner != want.owner || md.Phase != want.phase ||
			!slices.Equal(md.Finalizers.List(), want.fins) {
			return fmt.Errorf("%s: store v=%d ver=%d owner=%q phase=%v fins=%v; model v=%d ver=%d owner=%q phase=%v fins=%v",
				md.ID, value(r), md.Version, md.Owner, md.Phase, md.Finalizers.List(),
				want.value, want.version, want.owner, want.phase, want.fins)
		}
	}

	return nil
}

func TestStoreMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))

	for range 300 {
		data := make([]byte, 4*200)
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}

		runModel(t, data)
	}
}

func FuzzStoreModel(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 6, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0})
	f.Add([]byte{0, 1, 1, 5, 1, 1, 1, 6, 2, 1, 1, 7, 3, 1, 2, 9, 3, 1, 1, 9})

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4*500 {
			data = data[:4*500]
		}

		runModel(t, data)
	})
}
