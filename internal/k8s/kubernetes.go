package k8s

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// Options configure Kubernetes on a node; the zero value is a node's.
type Options struct {
	// Root is where the absolute paths Kubernetes uses are ("/").
	Root string
	// NoKubelet runs the controllers but not the kubelet (nodes that share
	// the host's filesystem, as some tests run them).
	NoKubelet bool
	// KubeletOff, when set, is asked as the services start (a metal
	// node's kernel command line is readable only once /proc is
	// mounted): true loads no kubelet.
	KubeletOff func() bool
	// EtcdClient is the local etcd member's client, for the manifest
	// apply lock.
	EtcdClient func(ctx context.Context) (*clientv3.Client, error)
}

// Kubernetes is one node's Kubernetes: its controllers and the kubelet.
// machined wires it in beside the control plane's Plane.
type Kubernetes struct {
	opts    Options
	kubelet *kubelet
}

// New makes the node's Kubernetes.
func New(opts Options) *Kubernetes { return &Kubernetes{opts: opts} }

func (k *Kubernetes) root() string {
	if k.opts.Root == "" {
		return "/"
	}

	return k.opts.Root
}

// Node is what Kubernetes needs of the node runtime (*machine.Node): its
// bus, its platform and container runtime, and the services the kubelet
// runs among.
type Node interface {
	Store() *bus.Store
	Platform() platform.Platform
	Runtime() cri.Runtime
	ServiceManager
	// CanLowerOOMScoreAdj is false on a sandboxed Docker node, where the
	// kubelet must keep its own OOM score.
	CanLowerOOMScoreAdj() bool
}

// ServiceManager is what the kubelet's controller needs of the node's
// services (Talos's V1Alpha1ServiceManager): a kubelet whose spec changed
// is restarted only if it runs, since one not started yet will read the
// new spec when it starts. The node's supervisor is made anew at every
// boot, so these ask whichever runs now.
type ServiceManager interface {
	// ServiceRunning is false for an unknown service and before the node
	// runs any.
	ServiceRunning(id string) bool
	RestartService(ctx context.Context, id string) error
}

// Controllers are machine.Options.Controllers' share for Kubernetes.
func (k *Kubernetes) Controllers(n Node) []bus.Controller {
	if k.kubelet == nil {
		k.kubelet = &kubelet{k: k, node: n}
	}

	inContainer := !n.Platform().IsMetal()

	cs := []bus.Controller{
		ControlPlaneController{},
		&RenderSecretsController{Root: k.opts.Root},
		&RenderConfigsController{Root: k.opts.Root},
		&StaticPodController{Root: k.opts.Root},
		&StaticPodServerController{},
		NodenameController{},
		NodeIPController{},
		&KubeletSpecController{InContainer: inContainer},
		KubeletConfigController{},
		&ManifestController{},
		&ManifestApplyController{EtcdClient: k.opts.EtcdClient},
		&NodeLabelController{},
		&StaticPodStatusController{Root: k.opts.Root},
	}

	if !k.opts.NoKubelet {
		cs = append(cs, &KubeletServiceController{kubelet: k.kubelet}, &NodeCordonController{Root: k.opts.Root}, &KubePrismController{Root: k.opts.Root})
	}

	return cs
}

// Services are machine.Options.Services' share: the kubelet, on every
// node with a cluster to join.
func (k *Kubernetes) Services(n Node, cfg *configs.Config) []supervisor.Service {
	if k.opts.NoKubelet || cfg == nil || cfg.Cluster == nil || k.kubelet == nil {
		return nil
	}

	if k.opts.KubeletOff != nil && k.opts.KubeletOff() {
		return nil
	}

	k.kubelet.restrictOOM = !n.CanLowerOOMScoreAdj()

	return []supervisor.Service{k.kubelet.service()}
}
