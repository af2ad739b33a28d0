package supervisor

import (
	"context"
	"fmt"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

// The Services resource mirrors each service on the bus, as Talos's
// Services.v1alpha1.talos.dev does, so `talosctl get services` and
// controllers can follow them.
const (
	// Owner is the bus owner of Services resources.
	Owner = "supervisor"
)

// specEvents is how many recent events the resource carries.
const specEvents = 5

// specLocked renders the resource spec. Caller holds Supervisor.mu.
func (svc *service) specLocked() v1alpha1.ServiceSpec {
	spec := v1alpha1.ServiceSpec{
		State:   svc.state.String(),
		Running: svc.state == Running,
		Healthy: svc.health.Healthy,
		Unknown: svc.health.Unknown,
	}

	evs := svc.events.last(specEvents)
	if len(evs) > 0 {
		spec.LastMessage = evs[len(evs)-1].Message
		spec.Events = make([]v1alpha1.EventSpec, len(evs))

		for i, ev := range evs {
			spec.Events[i] = v1alpha1.EventSpec{State: ev.State.String(), Message: ev.Message, Timestamp: ev.Timestamp}
		}
	}

	return spec
}

// storeResource writes spec to the bus. Callers hold pubMu, so the
// resource never goes back to an older state.
func (s *Supervisor) storeResource(id string, spec v1alpha1.ServiceSpec) {
	if s.opts.Store == nil {
		return
	}

	_, err := s.opts.Store.Modify(context.Background(), bus.NewTyped(runtime.NamespaceRuntime, v1alpha1.ServiceType, id, spec), func(r bus.Resource) error {
		res, ok := r.(*v1alpha1.Service)
		if !ok {
			return fmt.Errorf("stored as %T, not %T", r, res)
		}

		*res.TypedSpec() = spec

		return nil
	}, bus.WithOwner(Owner))
	if err != nil {
		fmt.Fprintf(s.opts.Console, "[talos] supervisor: error updating %s: %v\n", v1alpha1.ServicePointer(id), err)
	}
}
