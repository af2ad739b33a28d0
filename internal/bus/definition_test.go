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
		{Type: "MachineStatuses.runtime.talosbox.dev", DefaultNamespace: "runtime"},
		{Type: "MountStatuses.runtime.talosbox.dev", DefaultNamespace: "runtime", Aliases: []string{"mounts"}},
		{Type: "MachineConfigs.config.talosbox.dev", DefaultNamespace: "config", Aliases: []string{"machineconfig"}, Sensitive: true},
		{Type: "AddressStatuses.net.talosbox.dev", DefaultNamespace: "network", Aliases: []string{"address", "addresses"},
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
		{"MachineStatuses.runtime.talosbox.dev", "MachineStatuses.runtime.talosbox.dev", ""},
		{"machinestatuses", "MachineStatuses.runtime.talosbox.dev", ""},
		{"machinestatus", "MachineStatuses.runtime.talosbox.dev", ""},
		{"MOUNTS", "MountStatuses.runtime.talosbox.dev", ""},
		{"address", "AddressStatuses.net.talosbox.dev", ""},
		{"addressstatus", "AddressStatuses.net.talosbox.dev", ""},
		{"as", "AddressStatuses.net.talosbox.dev", ""},
		{"mc", "MachineConfigs.config.talosbox.dev", ""},
		{"ms", "", `resource type "ms" is ambiguous: it could be MachineStatuses.runtime.talosbox.dev, MountStatuses.runtime.talosbox.dev`},
		{"mss", "", `resource type "mss" is ambiguous: it could be MachineStatuses.runtime.talosbox.dev, MountStatuses.runtime.talosbox.dev`},
		{"nothing", "", `resource type "nothing" not found`},
		{"machinestatu", "", `resource type "machinestatu" not found; did you mean "MachineStatuses.runtime.talosbox.dev"?`},
		{"mount", "", `resource type "mount" not found; did you mean "MountStatuses.runtime.talosbox.dev"?`},
		// Initials one letter off name another type: "bs" is not "as".
		{"bs", "", `resource type "bs" not found`},
		{"adresses", "", `resource type "adresses" not found; did you mean "AddressStatuses.net.talosbox.dev"?`},
		// The closest comes first.
		{"machinestatse", "", `resource type "machinestatse" not found; did you mean "MachineStatuses.runtime.talosbox.dev"?`},
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

	if d, _ := r.Get("MachineConfigs.config.talosbox.dev"); !d.Sensitive || d.DefaultNamespace != "config" {
		t.Errorf("definition lost fields: %+v", d)
	}

	if all := r.All(); len(all) != 4 || all[0].Type != "AddressStatuses.net.talosbox.dev" {
		t.Errorf("All() = %v", all)
	}
}

func TestRegistryRejects(t *testing.T) {
	tests := []struct {
		def  bus.Definition
		want string
	}{
		{bus.Definition{Type: "addresses.net.talosbox.dev", DefaultNamespace: "n"},
			`register "addresses.net.talosbox.dev": type must look like CamelCasePlural.domain.suffix`},
		{bus.Definition{Type: "Link.net.talosbox.dev", DefaultNamespace: "n"},
			`register "Link.net.talosbox.dev": type must look like CamelCasePlural.domain.suffix`},
		{bus.Definition{Type: "Links.net.talosbox.dev"}, `register "Links.net.talosbox.dev": default namespace is required`},
		{bus.Definition{Type: "MachineStatuses.runtime.talosbox.dev", DefaultNamespace: "runtime"},
			`register "MachineStatuses.runtime.talosbox.dev": already registered`},
		{bus.Definition{Type: "Mounts.block.talosbox.dev", DefaultNamespace: "block", Aliases: []string{"mounts"}},
			`register "Mounts.block.talosbox.dev": alias "mounts" already names MountStatuses.runtime.talosbox.dev`},
	}

	for _, tt := range tests {
		r := testRegistry(t)
		if err := r.Register(tt.def); errString(err) != tt.want {
			t.Errorf("Register(%s) = %v, want %s", tt.def.Type, err, tt.want)
		}
	}
}
