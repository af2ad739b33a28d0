package v1alpha1

import (
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// ServiceType is the type's name, as Talos has it.
const ServiceType = "Services.v1alpha1.talos.dev"

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
type Service = bus.Typed[ServiceSpec]

// ServicePointer names the Services resource of a service.
func ServicePointer(id string) bus.Pointer {
	return bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: ServiceType, ID: id}
}
