package k8s

import (
	"context"
	"encoding/json"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// ControlPlaneRoleLabel marks control-plane nodes, as Talos and kubeadm do.
const ControlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"

var nodesResource = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// NodeLabelController gives the control plane's Node object its role
// label and machine.nodeLabels once the kubelet has registered it
// (Talos's NodeLabelSpecController and NodeApplyController). The kubelet
// may not set node-role labels itself (NodeRestriction), so the node's
// admin credentials do. It retries until the Node exists.
type NodeLabelController struct {
	// RetryInterval paces retries (10 s).
	RetryInterval time.Duration
}

// Name implements bus.Controller.
func (*NodeLabelController) Name() string { return "k8s.NodeApplyController" }

// Inputs implements bus.Controller.
func (*NodeLabelController) Inputs() []bus.Input {
	return []bus.Input{machineConfigInput, {Namespace: k8s.NamespaceK8s, Type: k8s.NodenameType}}
}

// Outputs implements bus.Controller.
func (*NodeLabelController) Outputs() []bus.Output { return nil }

// Run implements bus.Controller.
func (c *NodeLabelController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	every := c.RetryInterval
	if every == 0 {
		every = 10 * time.Second
	}

	retry := time.NewTimer(time.Hour)
	retry.Stop()

	applied := ""

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-retry.C:
		}

		cfg, err := activeConfig(ctx, r)
		if err != nil {
			return err
		}

		if cfg == nil || !cfg.IsControlPlane() {
			continue
		}

		name, err := bus.GetAs[*k8s.Nodename](ctx, r, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.NodenameType, ID: k8s.NodenameID})
		if err != nil {
			continue
		}

		// The role label, unless a KubeNodeConfig, which lists the
		// node's labels itself, leaves it out.
		labels := map[string]any{}
		if configs.HasControlPlaneLabel(cfg) {
			labels[ControlPlaneRoleLabel] = ""
		}

		for k, v := range cfg.Machine.NodeLabels {
			labels[k] = v
		}

		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}}) //nolint:errchkjson // plain maps
		key := name.TypedSpec().Nodename + string(patch)

		if key == applied {
			continue
		}

		if err := patchNode(ctx, cfg, name.TypedSpec().Nodename, patch); err != nil {
			if !apierrors.IsNotFound(err) {
				r.Logger().Info("node labels not applied yet, retrying", "error", err)
			}

			retry.Reset(every)

			continue
		}

		r.Logger().Info("node labels applied", "node", name.TypedSpec().Nodename, "labels", len(labels))
		applied = key

		r.ResetRestartBackoff()
	}
}

func patchNode(ctx context.Context, cfg *configs.Config, node string, patch []byte) error {
	rc, err := AdminRESTConfig(cfg)
	if err != nil {
		return err
	}

	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	_, err = dc.Resource(nodesResource).Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "talos"})

	return err
}
