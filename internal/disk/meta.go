package disk

import (
	"fmt"

	"github.com/talosbox/talosbox/internal/meta"
)

// WriteMeta makes the META partition r an empty Talos META: both ADV copies
// written and sealed, the syslinux area zeroed. Talos's installer flushes
// META the same way right after partitioning, so that the first boot finds
// a written store (an all-zero one reads as empty too, but cannot be told
// from a partition that lost its contents).
func WriteMeta(r Region) error {
	m, err := meta.New(r.Size)
	if err != nil {
		return fmt.Errorf("write META on %s: %w", r.File.Name(), err)
	}

	img, err := m.Encode()
	if err != nil {
		return fmt.Errorf("write META on %s: %w", r.File.Name(), err)
	}

	if _, err := r.File.WriteAt(img, r.Offset); err != nil {
		return fmt.Errorf("write META on %s: %w", r.File.Name(), err)
	}

	if err := r.File.Sync(); err != nil {
		return fmt.Errorf("write META on %s: %w", r.File.Name(), err)
	}

	return nil
}
