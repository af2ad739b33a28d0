package machine

import (
	"github.com/talosbox/talosbox/internal/cri"
)

// Runtime is the node's containerd layout.
func (n *Node) Runtime() cri.Runtime { return cri.NewRuntime(n.opts.Platform) }

// CanLowerOOMScoreAdj says whether processes the node starts may get a
// negative oom_score_adj (see cri.Containerd.CanLowerOOMScoreAdj).
func (n *Node) CanLowerOOMScoreAdj() bool { return n.containerd.CanLowerOOMScoreAdj() }

// FindRunc is cri.FindRunc, kept here because machined's applet asks the
// node package whether it can run the kubelet before it builds a node.
func FindRunc() string { return cri.FindRunc() }
