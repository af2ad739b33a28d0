package k8s

import (
	"context"
	"strconv"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

// StaticPodController renders the control plane's static pods once etcd
// is healthy and their secrets and config files are written (Talos's
// ControlPlaneStaticPodController). Every pod is annotated with the
// versions of what it reads, so a change to any of them makes the kubelet
// restart it; without etcd or the files every pod is removed.
type StaticPodController struct{}

// Name implements bus.Controller.
func (StaticPodController) Name() string { return "k8s.ControlPlaneStaticPodController" }

// Inputs implements bus.Controller.
func (StaticPodController) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.APIServerConfigType},
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.ControllerManagerConfigType},
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.SchedulerConfigType},
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.SecretsStatusType},
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.ConfigStatusType},
		{Namespace: runtime.NamespaceRuntime, Type: v1alpha1.ServiceType, ID: "etcd"},
	}
}

// Outputs implements bus.Controller.
func (StaticPodController) Outputs() []bus.Output { return []bus.Output{{Type: k8s.StaticPodType}} }

// Run implements bus.Controller.
func (c StaticPodController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		want, err := c.pods(ctx, r)
		if err != nil {
			return err
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.StaticPodType, want); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

func (c StaticPodController) pods(ctx context.Context, r bus.ControllerRuntime) (map[string]k8s.StaticPodSpec, error) {
	want := map[string]k8s.StaticPodSpec{}

	etcd, err := bus.GetAs[*v1alpha1.Service](ctx, r, v1alpha1.ServicePointer("etcd"))
	if bus.IsNotFound(err) || (err == nil && !(etcd.TypedSpec().Running && etcd.TypedSpec().Healthy)) {
		return want, nil
	}

	if err != nil {
		return nil, err
	}

	status := func(typ string) (k8s.StatusSpec, bool, error) {
		s, err := bus.GetAs[*k8s.Status](ctx, r, bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: typ, ID: k8s.StaticPodsStatusID})
		if bus.IsNotFound(err) {
			return k8s.StatusSpec{}, false, nil
		}

		if err != nil {
			return k8s.StatusSpec{}, false, err
		}

		return *s.TypedSpec(), s.TypedSpec().Ready, nil
	}

	sec, ok, err := status(k8s.SecretsStatusType)
	if err != nil || !ok {
		return want, err
	}

	conf, ok, err := status(k8s.ConfigStatusType)
	if err != nil || !ok {
		return want, err
	}

	for id, typ := range map[string]string{k8s.APIServerID: k8s.APIServerConfigType, k8s.ControllerManagerID: k8s.ControllerManagerConfigType, k8s.SchedulerID: k8s.SchedulerConfigType} {
		cc, err := bus.GetAs[*k8s.ComponentConfig](ctx, r, bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: typ, ID: id})
		if bus.IsNotFound(err) {
			continue
		}

		if err != nil {
			return nil, err
		}

		spec := cc.TypedSpec()
		if !spec.Enabled {
			continue
		}

		pod, err := render.StaticPodFor(id, *spec, render.PodVersions{Secrets: sec.Version, Config: strconv.FormatUint(cc.Metadata().Version, 10), ConfigFile: conf.Version})
		if err != nil {
			r.Logger().Error("static pod", "id", id, "error", err)
			continue
		}

		want[id] = k8s.StaticPodSpec{Pod: pod}
	}

	return want, nil
}
