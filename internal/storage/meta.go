package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// META on the node: the partition is found at boot (a copy found bad is
// repaired there), every tag is mirrored as a MetaKeys resource, and the
// API's MetaWrite and MetaDelete edit it. Each edit reads, changes and
// writes the partition under its lock (internal/meta.Edit), so an
// installer or a second writer never loses a change to a stale copy held
// here; the resources follow what was written.

// ErrNoMeta is returned by the META calls of a node that has no META
// partition (a container, or a metal node before its install).
var ErrNoMeta = errors.New("this node has no META partition")

// secretTags hold key material: STATE's encryption config may carry a
// static passphrase in clear, and the machine token identifies the node to
// its management service. Talos shows them to readers; the node's design
// keeps secrets off a reader's path.
var secretTags = map[uint8]bool{meta.StateEncryptionConfig: true, meta.UniqueMachineToken: true}

// metaState is where the node's META is.
type metaState struct {
	// mu orders edits with the resources they publish.
	mu   sync.Mutex
	path string // the partition (or image file); "" without one
	// missing says why path is "" (ErrNoMeta's detail).
	missing string
}

// LoadMeta finds META, repairs a bad copy and mirrors the tags. A META
// that cannot be read does not stop the boot (nothing the boot needs is
// kept there yet): it is reported, and every META call answers the same
// error until it is fixed.
func (v *Volumes) LoadMeta(ctx context.Context, w io.Writer) error {
	path := v.opts.MetaPath

	if path == "" {
		devs, err := disk.Scan(v.opts.SysRoot)
		if err != nil {
			return err
		}

		dev, ok := findMeta(devs)
		if !ok {
			v.meta.mu.Lock()
			v.meta.missing = "it is not installed yet (the install writes META)"
			v.meta.mu.Unlock()

			fmt.Fprintf(w, "[talos] no %s partition: not installed yet\n", disk.LabelMeta)

			return nil
		}

		path = dev.Path
	}

	v.meta.mu.Lock()
	defer v.meta.mu.Unlock()

	v.meta.path = path

	m, repaired, err := meta.Edit(path, nil)
	if err != nil {
		fmt.Fprintf(w, "[talos] META on %s cannot be used: %v\n", path, err)
		return nil
	}

	for _, d := range repaired {
		fmt.Fprintf(w, "[talos] META on %s: repaired %s\n", path, d)
	}

	fmt.Fprintf(w, "[talos] META on %s: %d key(s)\n", path, len(m.List()))

	return v.publishMeta(ctx, m)
}

// findMeta picks the META partition the node uses: the one on the disk
// holding STATE (as MountState picks STATE: the first by name), else the
// first found.
func findMeta(devs []disk.BlockDevice) (disk.BlockDevice, bool) {
	sysDisk := ""
	if st, ok := disk.FindPartition(devs, "", disk.LabelState); ok {
		sysDisk = st.Disk
	}

	return disk.FindPartition(devs, sysDisk, disk.LabelMeta)
}

// HasMeta says whether META was found.
func (v *Volumes) HasMeta() bool {
	v.meta.mu.Lock()
	defer v.meta.mu.Unlock()

	return v.meta.path != ""
}

// MetaWrite sets tag to value on the node's META and in its MetaKeys.
func (v *Volumes) MetaWrite(ctx context.Context, tag uint8, value []byte) error {
	_, err := v.editMeta(ctx, func(m *meta.Meta) error {
		_, err := m.SetTag(tag, value)
		return err
	})

	return err
}

// MetaDelete removes tag from the node's META; found is false when no
// copy held it.
func (v *Volumes) MetaDelete(ctx context.Context, tag uint8) (found bool, err error) {
	_, err = v.editMeta(ctx, func(m *meta.Meta) error {
		found = m.DeleteTag(tag)
		return nil
	})

	return found, err
}

func (v *Volumes) editMeta(ctx context.Context, fn func(*meta.Meta) error) (*meta.Meta, error) {
	v.meta.mu.Lock()
	defer v.meta.mu.Unlock()

	if v.meta.path == "" {
		why := v.meta.missing
		if why == "" {
			why = "it runs in a container: META is a partition of a metal node's system disk"
		}

		return nil, fmt.Errorf("%w: %s", ErrNoMeta, why)
	}

	m, repaired, err := meta.Edit(v.meta.path, fn)
	if err != nil {
		return nil, err
	}

	for _, d := range repaired {
		v.logf("META on %s: repaired %s", v.meta.path, d)
	}

	return m, v.publishMeta(ctx, m)
}

// publishMeta makes the MetaKeys exactly m's tags.
func (v *Volumes) publishMeta(ctx context.Context, m *meta.Meta) error {
	want := map[string]runtime.MetaKeySpec{}
	for tag, val := range m.Values() {
		want[meta.TagID(tag)] = runtime.MetaKeySpec{Value: string(val), Secret: secretTags[tag]}
	}

	return bus.SyncOutputs(ctx, ownedStore{v.opts.Store, v.opts.Owner}, v.opts.Owner, runtime.NamespaceRuntime, runtime.MetaKeyType, want)
}

// ownedStore is the node's store writing as the volumes' owner, for
// SyncOutputs.
type ownedStore struct {
	s     *bus.Store
	owner string
}

func (o ownedStore) Modify(ctx context.Context, r bus.Resource, fn func(bus.Resource) error) (bus.Resource, error) {
	return o.s.Modify(ctx, r, fn, bus.WithOwner(o.owner))
}

func (o ownedStore) List(ctx context.Context, k bus.Kind, opts ...bus.ListOption) ([]bus.Resource, error) {
	return o.s.List(ctx, k, opts...)
}

func (o ownedStore) Destroy(ctx context.Context, p bus.Pointer) error {
	return o.s.Destroy(ctx, p, bus.WithOwner(o.owner))
}
