package supervisor

import (
	"context"
	"fmt"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
)

// The Services resource mirrors each service on the bus, as Talos's
// Services.v1alpha1.talos.dev does, so `talosctl get services` and
// controllers can follow them.
const (
	ServiceType = "Services.v1alpha1.talos.dev"
	Namespace   = "runtime"
	// Owner is the bus owner of Services resources.
	Owner = "supervisor"
)

// Definition registers the Services type.
var Definition = bus.Definition{
	Type:             ServiceType,
	DefaultNamespace: Namespace,
	Aliases:          []string{"svc"},
	// Talos's columns; the state is in the spec and in `services`.
	PrintColumns: []bus.PrintColumn{
		{Name: "RUNNING", JSONPath: "{.running}"},
		{Name: "HEALTHY", JSONPath: "{.healthy}"},
		{Name: "HEALTH UNKNOWN", JSONPath: "{.unknown}"},
	},
}

// specEvents is how many recent events the resource carries.
const specEvents = 5

// ServiceSpec is the spec of a Services resource.
type ServiceSpec struct {
	State       string `yaml:"state"`
	Running     bool   `yaml:"running"`
	Healthy     bool   `yaml:"healthy"`
	Unknown     bool   `yaml:"unknown"`
	LastMessage string `yaml:"lastMessage"`
	// Events are the last few events, oldest first.
	Events []EventSpec `yaml:"events,omitempty"`
}

// EventSpec is one event in a ServiceSpec.
type EventSpec struct {
	State     string    `yaml:"state"`
	Message   string    `yaml:"message"`
	Timestamp time.Time `yaml:"timestamp"`
}

// DeepCopy implements bus.Copier, sparing the bus its reflective copy.
func (s ServiceSpec) DeepCopy() ServiceSpec {
	if s.Events != nil {
		s.Events = append([]EventSpec(nil), s.Events...)
	}

	return s
}

// ServiceResource is a Services resource.
type ServiceResource = bus.Typed[ServiceSpec]

// ServicePointer names the Services resource of a service.
func ServicePointer(id string) bus.Pointer {
	return bus.Pointer{Namespace: Namespace, Type: ServiceType, ID: id}
}

// specLocked renders the resource spec. Caller holds Supervisor.mu.
func (svc *service) specLocked() ServiceSpec {
	spec := ServiceSpec{
		State:   svc.state.String(),
		Running: svc.state == Running,
		Healthy: svc.health.Healthy,
		Unknown: svc.health.Unknown,
	}

	evs := svc.events.last(specEvents)
	if len(evs) > 0 {
		spec.LastMessage = evs[len(evs)-1].Message
		spec.Events = make([]EventSpec, len(evs))

		for i, ev := range evs {
			spec.Events[i] = EventSpec{State: ev.State.String(), Message: ev.Message, Timestamp: ev.Timestamp}
		}
	}

	return spec
}

// storeResource writes spec to the bus. Callers hold pubMu, so the
// resource never goes back to an older state.
func (s *Supervisor) storeResource(id string, spec ServiceSpec) {
	if s.opts.Store == nil {
		return
	}

	_, err := s.opts.Store.Modify(context.Background(), bus.NewTyped(Namespace, ServiceType, id, spec), func(r bus.Resource) error {
		res, ok := r.(*ServiceResource)
		if !ok {
			return fmt.Errorf("stored as %T, not %T", r, res)
		}

		*res.TypedSpec() = spec

		return nil
	}, bus.WithOwner(Owner))
	if err != nil {
		fmt.Fprintf(s.opts.Console, "[talos] supervisor: error updating %s: %v\n", ServicePointer(id), err)
	}
}
