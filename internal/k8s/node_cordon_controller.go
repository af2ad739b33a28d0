package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// NodeCordonController takes off the cordon an upgrade put on the node
// (Talos's NodeCordonedSpecController) once the node runs again and its
// kubelet reports Ready, so workloads come back only to a node that can
// run them. A node cordoned by someone else (no talos.dev/cordoned
// annotation) stays cordoned.
type NodeCordonController struct {
	// Root is where the kubelet's kubeconfig is ("/").
	Root string
	// RetryInterval paces the checks until the node is Ready (5 s).
	RetryInterval time.Duration
}

// Name implements bus.Controller.
func (*NodeCordonController) Name() string { return "k8s.NodeCordonedSpecController" }

// Inputs implements bus.Controller.
func (*NodeCordonController) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStageType},
		{Namespace: k8s.NamespaceK8s, Type: k8s.NodenameType},
	}
}

// Outputs implements bus.Controller.
func (*NodeCordonController) Outputs() []bus.Output { return nil }

// Run implements bus.Controller.
func (c *NodeCordonController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	every := c.RetryInterval
	if every == 0 {
		every = 5 * time.Second
	}

	retry := time.NewTimer(time.Hour)
	retry.Stop()

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-retry.C:
		}

		st, err := bus.GetAs[*runtime.MachineStage](ctx, r, bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStageType, ID: runtime.MachineID})
		if err != nil || st.TypedSpec().Stage != runtime.StageRunning {
			continue
		}

		name, err := bus.GetAs[*k8s.Nodename](ctx, r, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.NodenameType, ID: k8s.NodenameID})
		if err != nil {
			continue
		}

		done, err := c.uncordon(ctx, name.TypedSpec().Nodename, r.Logger().Info)
		if err != nil {
			r.Logger().Info("node not uncordoned yet, retrying", "error", err)
		}

		if !done {
			retry.Reset(every)

			continue
		}

		// Once per boot: a cordon put on later is someone's choice.
		r.ResetRestartBackoff()

		<-ctx.Done()

		return nil
	}
}

// uncordon says whether there is nothing more to do this boot.
func (c *NodeCordonController) uncordon(ctx context.Context, node string, logf func(string, ...any)) (bool, error) {
	rc, err := kubeletRESTConfig(c.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // the kubelet has not joined yet (or never runs here)
	}

	if err != nil {
		return false, err
	}

	d, err := NewDrainer(rc)
	if err != nil {
		return false, err
	}

	ready, err := d.NodeReady(ctx, node)
	if apierrors.IsNotFound(err) {
		return false, nil
	}

	if err != nil || !ready {
		return false, err
	}

	changed, err := d.Uncordon(ctx, node, false)
	if err != nil {
		return false, err
	}

	if changed {
		logf("uncordoned the node: it is Ready again", "node", node)
	}

	return true, nil
}

// kubeletRESTConfig is a client with the kubelet's credentials (its
// kubeconfig, written once it joined): what Talos uses to cordon, drain
// and uncordon, on workers and control planes alike.
func kubeletRESTConfig(root string) (*rest.Config, error) {
	if root == "" {
		root = "/"
	}

	path := filepath.Join(root, constants.KubeletKubeconfigPath)
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}

	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubelet kubeconfig: %w", err)
	}

	rc.Timeout = 30 * time.Second

	return rc, nil
}

// CordonAndDrain is machine.Options.Drain: before an upgrade's reboot it
// cordons this node and evicts its pods, with the kubelet's credentials.
// A node whose kubelet never joined has nothing to drain.
func (k *Kubernetes) CordonAndDrain(ctx context.Context, w io.Writer) error {
	if k.kubelet == nil || k.kubelet.node == nil {
		return nil
	}

	rc, err := kubeletRESTConfig(k.opts.Root)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(w, "[talos] no kubelet has joined a cluster here: nothing to drain")
		return nil
	}

	if err != nil {
		return err
	}

	name, err := bus.GetAs[*k8s.Nodename](ctx, k.kubelet.node.Store(), bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.NodenameType, ID: k8s.NodenameID})
	if err != nil {
		return fmt.Errorf("the node's name: %w", err)
	}

	d, err := NewDrainer(rc)
	if err != nil {
		return err
	}

	d.Log = w

	return d.CordonAndDrain(ctx, name.TypedSpec().Nodename)
}
