package bus_test

import (
	"errors"
	"testing"

	"github.com/talosbox/talosbox/internal/bus"
)

func testRegistry(t *testing.T) *bus.Registry {
	t.Helper()

	r := bus.NewRegistry()
	for _, d := range []bus.Definition{
		{Type: "MachineStatuses.runtime.talos.dev", DefaultNamespace: "runtime"},
		{Type: "MountStatuses.runtime.talos.dev", DefaultNamespace: "runtime", Aliases: []string{"mounts"}},
		{Type: "MachineConfigs.config.talos.dev", DefaultNamespace: "config", Aliases: []string{"machineconfig"}, Sensitive: true},
		{Type: "AddressStatuses.net.talos.dev", DefaultNamespace: "network", Aliases: []string{"address", "addresses"},
			PrintColumns: []bus.PrintColumn{{Name: "ADDRESS", JSONPath: "{.address}"}}},
	} {
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
	}

	return r
}

func TestRegistryLookup(t *testing.T) {
	r := testRegistry(t)

	tests := []struct {
		name, want, err string
	}{
		{"MachineStatuses.runtime.talos.dev", "MachineStatuses.runtime.talos.dev", ""},
		{"machinestatuses", "MachineStatuses.runtime.talos.dev", ""},
		{"machinestatus", "MachineStatuses.runtime.talos.dev", ""},
		{"MOUNTS", "MountStatuses.runtime.talos.dev", ""},
		{"address", "AddressStatuses.net.talos.dev", ""},
		{"addressstatus", "AddressStatuses.net.talos.dev", ""},
		{"as", "AddressStatuses.net.talos.dev", ""},
		{"mc", "MachineConfigs.config.talos.dev", ""},
		{"ms", "", `resource type "ms" is ambiguous: it could be MachineStatuses.runtime.talos.dev, MountStatuses.runtime.talos.dev`},
		{"mss", "", `resource type "mss" is ambiguous: it could be MachineStatuses.runtime.talos.dev, MountStatuses.runtime.talos.dev`},
		{"nothing", "", `resource type "nothing" not found`},
		{"machinestatu", "", `resource type "machinestatu" not found; did you mean "MachineStatuses.runtime.talos.dev"?`},
		{"mount", "", `resource type "mount" not found; did you mean "MountStatuses.runtime.talos.dev"?`},
		// Initials one letter off name another type: "bs" is not "as".
		{"bs", "", `resource type "bs" not found`},
		{"adresses", "", `resource type "adresses" not found; did you mean "AddressStatuses.net.talos.dev"?`},
		// The closest comes first.
		{"machinestatse", "", `resource type "machinestatse" not found; did you mean "MachineStatuses.runtime.talos.dev"?`},
	}

	for _, tt := range tests {
		d, err := r.Lookup(tt.name)
		if errString(err) != tt.err || d.Type != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %q", tt.name, d.Type, err, tt.want, tt.err)
		}
	}

	if _, err := r.Lookup("nothing"); !errors.Is(err, bus.ErrUnknownType) {
		t.Errorf("unknown type error %v is not ErrUnknownType", err)
	}

	if _, err := r.Lookup("ms"); !errors.Is(err, bus.ErrAmbiguousType) {
		t.Errorf("ambiguous error %v is not ErrAmbiguousType", err)
	}

	if d, _ := r.Get("MachineConfigs.config.talos.dev"); !d.Sensitive || d.DefaultNamespace != "config" {
		t.Errorf("definition lost fields: %+v", d)
	}

	if all := r.All(); len(all) != 4 || all[0].Type != "AddressStatuses.net.talos.dev" {
		t.Errorf("All() = %v", all)
	}
}

func TestRegistryRejects(t *testing.T) {
	tests := []struct {
		def  bus.Definition
		want string
	}{
		{bus.Definition{Type: "addresses.net.talos.dev", DefaultNamespace: "n"},
			`register "addresses.net.talos.dev": type must look like CamelCasePlural.domain.suffix`},
		{bus.Definition{Type: "Link.net.talos.dev", DefaultNamespace: "n"},
			`register "Link.net.talos.dev": type must look like CamelCasePlural.domain.suffix`},
		{bus.Definition{Type: "Links.net.talos.dev"}, `register "Links.net.talos.dev": default namespace is required`},
		{bus.Definition{Type: "MachineStatuses.runtime.talos.dev", DefaultNamespace: "runtime"},
			`register "MachineStatuses.runtime.talos.dev": already registered`},
		{bus.Definition{Type: "Mounts.block.talos.dev", DefaultNamespace: "block", Aliases: []string{"mounts"}},
			`register "Mounts.block.talos.dev": alias "mounts" already names MountStatuses.runtime.talos.dev`},
	}

	for _, tt := range tests {
		r := testRegistry(t)
		if err := r.Register(tt.def); errString(err) != tt.want {
			t.Errorf("Register(%s) = %v, want %s", tt.def.Type, err, tt.want)
		}
	}
}
