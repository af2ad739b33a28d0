// Package mgmt holds talosctl's management commands, which work on files
// and local clusters rather than on one node's API: cluster create/destroy/
// show (Docker and QEMU), gen config/secrets, config (the talosconfig),
// validate and machineconfig patch, as Talos's cmd/talosctl/cmd/mgmt does.
package mgmt
