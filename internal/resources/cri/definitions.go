package cri

import "github.com/talosbox/talosbox/internal/bus"

// Definitions are this package's types, for the registry behind
// `talosctl get`.
var Definitions = []bus.Definition{
	// Registry credentials are secrets.
	{Type: RegistriesConfigType, DefaultNamespace: NamespaceCRI, Aliases: []string{"registriesconfig", "registries"}, Sensitive: true},
}
