package k8s

import (
	"strconv"

	"context"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/supervisor"
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
		{Namespace: NamespaceControlPlane, Type: APIServerConfigType},
		{Namespace: NamespaceControlPlane, Type: ControllerManagerConfigType},
		{Namespace: NamespaceControlPlane, Type: SchedulerConfigType},
		{Namespace: NamespaceControlPlane, Type: SecretsStatusType},
		{Namespace: NamespaceControlPlane, Type: ConfigStatusType},
		{Namespace: supervisor.Namespace, Type: supervisor.ServiceType, ID: "etcd"},
	}
}

// Outputs implements bus.Controller.
func (StaticPodController) Outputs() []bus.Output { return []bus.Output{{Type: StaticPodType}} }

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

		if err := bus.SyncOutputs(ctx, r, c.Name(), NamespaceK8s, StaticPodType, want); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

func (c StaticPodController) pods(ctx context.Context, r bus.ControllerRuntime) (map[string]StaticPodSpec, error) {
	want := map[string]StaticPodSpec{}

	etcd, err := bus.GetAs[*supervisor.ServiceResource](ctx, r, supervisor.ServicePointer("etcd"))
	if bus.IsNotFound(err) || (err == nil && !(etcd.TypedSpec().Running && etcd.TypedSpec().Healthy)) {
		return want, nil
	}

	if err != nil {
		return nil, err
	}

	status := func(typ string) (StatusSpec, bool, error) {
		s, err := bus.GetAs[*Status](ctx, r, bus.Pointer{Namespace: NamespaceControlPlane, Type: typ, ID: StaticPodsStatusID})
		if bus.IsNotFound(err) {
			return StatusSpec{}, false, nil
		}

		if err != nil {
			return StatusSpec{}, false, err
		}

		return *s.TypedSpec(), s.TypedSpec().Ready, nil
	}

	sec, ok, err := status(SecretsStatusType)
	if err != nil || !ok {
		return want, err
	}

	conf, ok, err := status(ConfigStatusType)
	if err != nil || !ok {
		return want, err
	}

	for id, typ := range map[string]string{APIServerID: APIServerConfigType, ControllerManagerID: ControllerManagerConfigType, SchedulerID: SchedulerConfigType} {
		cc, err := bus.GetAs[*ComponentConfig](ctx, r, bus.Pointer{Namespace: NamespaceControlPlane, Type: typ, ID: id})
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

		pod, err := StaticPodFor(id, *spec, podVersions{secrets: sec.Version, config: strconv.FormatUint(cc.Metadata().Version, 10), configFile: conf.Version})
		if err != nil {
			r.Logger().Error("static pod", "id", id, "error", err)
			continue
		}

		want[id] = StaticPodSpec{Pod: pod}
	}

	return want, nil
}
