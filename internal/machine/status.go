package machine

import (
	"context"
	"fmt"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

// MachineStatusController derives MachineStatus from the stage and the
// services: the node is ready when it is running and every service is up
// (Running and not unhealthy), finished or skipped.
type MachineStatusController struct{}

// Name implements bus.Controller.
func (*MachineStatusController) Name() string { return "runtime.MachineStatusController" }

// Inputs implements bus.Controller.
func (*MachineStatusController) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStageType},
		{Namespace: runtime.NamespaceRuntime, Type: v1alpha1.ServiceType},
	}
}

// Outputs implements bus.Controller.
func (*MachineStatusController) Outputs() []bus.Output {
	return []bus.Output{{Type: runtime.MachineStatusType}}
}

// Run implements bus.Controller.
func (*MachineStatusController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		stage := runtime.StageBooting

		st, err := bus.GetAs[*runtime.MachineStage](ctx, r, bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MachineStageType, ID: runtime.MachineID})
		switch {
		case err == nil:
			stage = st.TypedSpec().Stage
		case !bus.IsNotFound(err):
			return err
		}

		svcs, err := bus.ListAs[*v1alpha1.Service](ctx, r, bus.Kind{Namespace: runtime.NamespaceRuntime, Type: v1alpha1.ServiceType})
		if err != nil {
			return err
		}

		var unmet []runtime.UnmetCondition

		if stage != runtime.StageRunning {
			unmet = append(unmet, runtime.UnmetCondition{Name: "stage", Reason: fmt.Sprintf("the node is %s", stage)})
		}

		for _, s := range svcs {
			spec := s.TypedSpec()
			up := (spec.Running && (spec.Healthy || spec.Unknown)) || spec.State == "Finished" || spec.State == "Skipped"

			if !up {
				unmet = append(unmet, runtime.UnmetCondition{Name: "service", Reason: fmt.Sprintf("service %q is %s", s.Metadata().ID, spec.State)})
			}
		}

		_, err = bus.ModifyAs(ctx, r, bus.NewTyped(runtime.NamespaceRuntime, runtime.MachineStatusType, runtime.MachineID, runtime.MachineStatusSpec{}), func(ms *runtime.MachineStatus) error {
			spec := ms.TypedSpec()
			spec.Stage = stage
			spec.Status.Ready = len(unmet) == 0
			spec.Status.UnmetConditions = unmet

			return nil
		})
		if err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
