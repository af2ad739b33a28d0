package machine

import (
	"context"
	"fmt"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/supervisor"
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
		{Namespace: NamespaceRuntime, Type: MachineStageType},
		{Namespace: supervisor.Namespace, Type: supervisor.ServiceType},
	}
}

// Outputs implements bus.Controller.
func (*MachineStatusController) Outputs() []bus.Output {
	return []bus.Output{{Type: MachineStatusType}}
}

// Run implements bus.Controller.
func (*MachineStatusController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		stage := StageBooting

		st, err := bus.GetAs[*MachineStage](ctx, r, bus.Pointer{Namespace: NamespaceRuntime, Type: MachineStageType, ID: MachineID})
		switch {
		case err == nil:
			stage = st.TypedSpec().Stage
		case !bus.IsNotFound(err):
			return err
		}

		svcs, err := bus.ListAs[*supervisor.ServiceResource](ctx, r, bus.Kind{Namespace: supervisor.Namespace, Type: supervisor.ServiceType})
		if err != nil {
			return err
		}

		var unmet []UnmetCondition

		if stage != StageRunning {
			unmet = append(unmet, UnmetCondition{Name: "stage", Reason: fmt.Sprintf("the node is %s", stage)})
		}

		for _, s := range svcs {
			spec := s.TypedSpec()
			up := (spec.Running && (spec.Healthy || spec.Unknown)) || spec.State == "Finished" || spec.State == "Skipped"

			if !up {
				unmet = append(unmet, UnmetCondition{Name: "service", Reason: fmt.Sprintf("service %q is %s", s.Metadata().ID, spec.State)})
			}
		}

		_, err = bus.ModifyAs(ctx, r, bus.NewTyped(NamespaceRuntime, MachineStatusType, MachineID, MachineStatusSpec{}), func(ms *MachineStatus) error {
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
