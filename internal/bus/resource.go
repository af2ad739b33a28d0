// Package bus is the in-process resource bus: a versioned store of typed
// resources, watches that never block writers, and a controller runtime that
// reconciles outputs from inputs with ownership enforced. Every service of a
// node shares one bus; an applet run alone builds its own.
//
// Resources handed out by Get, List and watch events are shared, read-only
// snapshots: never modify them. Change a resource with Modify, or DeepCopy
// it and Update the copy.
package bus

import (
	"fmt"
	"time"
)

// Resource is anything stored on the bus.
type Resource interface {
	Metadata() *Metadata
	Spec() any
	DeepCopy() Resource
}

// Kind names a collection: all resources of one type in one namespace.
type Kind struct {
	Namespace string
	Type      string
}

func (k Kind) String() string { return k.Type + "(" + k.Namespace + ")" }

// Pointer names one resource.
type Pointer struct {
	Namespace string
	Type      string
	ID        string
}

// Kind is the collection the pointer points into.
func (p Pointer) Kind() Kind { return Kind{Namespace: p.Namespace, Type: p.Type} }

func (p Pointer) String() string { return p.Namespace + "/" + p.Type + "/" + p.ID }

// Phase is a resource's lifecycle phase.
type Phase uint8

const (
	// PhaseRunning is the normal phase.
	PhaseRunning Phase = iota
	// PhaseTearingDown means the owner wants to destroy the resource and
	// waits for consumers to remove their finalizers.
	PhaseTearingDown
)

func (p Phase) String() string {
	if p == PhaseTearingDown {
		return "tearingDown"
	}

	return "running"
}

// MarshalText renders the phase by name in YAML and JSON.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a phase name.
func (p *Phase) UnmarshalText(b []byte) error {
	switch string(b) {
	case "running":
		*p = PhaseRunning
	case "tearingDown":
		*p = PhaseTearingDown
	default:
		return fmt.Errorf("unknown phase %q", b)
	}

	return nil
}

// Metadata is what the bus tracks about every resource. Version, Phase,
// Owner, Finalizers, Created and Updated are maintained by the store: values
// a caller sets there are ignored on write (except Version, which is the
// version the caller expects to replace).
type Metadata struct {
	Namespace  string     `yaml:"namespace" json:"namespace"`
	Type       string     `yaml:"type" json:"type"`
	ID         string     `yaml:"id" json:"id"`
	Version    uint64     `yaml:"version" json:"version"`
	Owner      string     `yaml:"owner" json:"owner"`
	Phase      Phase      `yaml:"phase" json:"phase"`
	Created    time.Time  `yaml:"created" json:"created"`
	Updated    time.Time  `yaml:"updated" json:"updated"`
	Labels     Labels     `yaml:"labels,omitempty" json:"labels,omitempty"`
	Finalizers Finalizers `yaml:"finalizers,omitempty" json:"finalizers,omitempty"`
}

// NewMetadata starts the metadata of a resource that is not stored yet.
func NewMetadata(ns, typ, id string) Metadata {
	return Metadata{Namespace: ns, Type: typ, ID: id}
}

// Pointer names the resource.
func (m *Metadata) Pointer() Pointer { return Pointer{Namespace: m.Namespace, Type: m.Type, ID: m.ID} }

// Kind is the resource's collection.
func (m *Metadata) Kind() Kind { return Kind{Namespace: m.Namespace, Type: m.Type} }

// Typed is the usual Resource: metadata plus a plain Go struct spec.
// Specs that hold slices, maps or pointers are deep-copied by reflection
// unless they implement Copier, which is faster.
type Typed[S any] struct {
	md   Metadata
	spec S
}

// Copier lets a spec copy itself without reflection.
type Copier[S any] interface {
	DeepCopy() S
}

// NewTyped makes a typed resource that is not stored yet.
func NewTyped[S any](ns, typ, id string, spec S) *Typed[S] {
	return &Typed[S]{md: NewMetadata(ns, typ, id), spec: spec}
}

// Metadata returns the resource's metadata for reading or, on a private
// copy, for editing labels.
func (r *Typed[S]) Metadata() *Metadata { return &r.md }

// Spec returns a pointer to the spec, as any.
func (r *Typed[S]) Spec() any { return &r.spec }

// TypedSpec returns a pointer to the spec.
func (r *Typed[S]) TypedSpec() *S { return &r.spec }

// DeepCopy returns an independent copy.
func (r *Typed[S]) DeepCopy() Resource {
	c := &Typed[S]{md: r.md}
	copySpecInto(&c.spec, &r.spec)

	return c
}
