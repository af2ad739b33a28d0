package machine

import (
	"context"

	"github.com/talosbox/talosbox/internal/storage"
)

// ErrNoMeta is returned by the META calls of a node that has no META
// partition (a container, or a metal node before its install).
var ErrNoMeta = storage.ErrNoMeta

// systemDisk returns the disk (vda) holding STATE, "" before an install.
func (n *Node) systemDisk() string { return n.volumes.SystemDisk() }

// MetaWrite sets tag to value on the node's META and in its MetaKeys.
func (n *Node) MetaWrite(ctx context.Context, tag uint8, value []byte) error {
	return n.volumes.MetaWrite(ctx, tag, value)
}

// MetaDelete removes tag from the node's META; found is false when no
// copy held it.
func (n *Node) MetaDelete(ctx context.Context, tag uint8) (found bool, err error) {
	return n.volumes.MetaDelete(ctx, tag)
}
