package machine

import (
	"path/filepath"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/k8s/validator"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/render"
)

// newKubeValidator finds the components' own validators in the images
// of the node's CRI containerd (the kubelet's in system, the control
// plane's in k8s.io). Its cache is on EPHEMERAL beside containerd's root,
// so that a cached binary is a hard link into the image's snapshot.
func newKubeValidator(p platform.Platform) *validator.Finder {
	rt := cri.NewRuntime(p)

	return &validator.Finder{Socket: rt.CRISocket, CacheDir: filepath.Join(filepath.Dir(rt.CRIRoot), "kube-config-validate")}
}

// load is the one validation (render.Load: configs' rules, then every
// renderer, as talosctl validate runs them) with what this node has: the
// components' own validation by the binaries in its images, or a warning
// that says why a component config was not validated so.
func (n *Node) load(data []byte) (*configs.Config, []string, error) {
	return render.LoadOn(data, n.mode(), render.WithKubeBinaries(n.kubeValidator.Binary))
}
