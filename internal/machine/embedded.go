package machine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/constants"
)

// readEmbeddedConfig takes the config an image carries in its initramfs
// (talosbox imager --embedded-config-path) and hides it under an empty
// read-only tmpfs, as Talos does: it holds the cluster's secrets, and
// nothing after the boot (talosctl read, a privileged pod) must find it
// there. It seeds a node with nothing persisted, like talos.config=.
func (n *Node) readEmbeddedConfig(w io.Writer) error {
	data, err := os.ReadFile(constants.EmbeddedConfigPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}

	if err != nil {
		return fmt.Errorf("read the embedded config: %w", err)
	}

	n.embeddedConfig = data

	if err := unix.Mount("tmpfs", constants.EmbeddedConfigDir, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC|unix.MS_NODEV, "size=4k,mode=0700"); err != nil {
		return fmt.Errorf("hide the embedded config under a tmpfs: %w", err)
	}

	fmt.Fprintf(w, "[talos] embedded config: %d bytes from %s, now hidden\n", len(data), constants.EmbeddedConfigPath)

	return nil
}
