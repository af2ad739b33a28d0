package machine

import (
	"github.com/talosbox/talosbox/internal/cri"
)

// Runtime is the node's containerd layout.
func (n *Node) Runtime() cri.Runtime { return cri.NewRuntime(n.opts.Platform) }
