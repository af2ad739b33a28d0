// Package global is what every talosctl command shares: the global flags
// (Args), the session that reaches the nodes (one client through the
// endpoints, or one per node in maintenance mode), the per-node fan-out,
// error reporting, tables, the talosconfig and kubeconfig files, and the
// wait for nodes to reboot. It imports no command, so the node-API verbs
// (package talos) and the management commands (package mgmt) both build on
// it, as Talos's talosctl builds on its global package.
package global
