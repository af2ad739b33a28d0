// Package talos holds talosctl's node-API verbs: each command talks to
// nodes through their API (get, logs, services, apply-config, reboot,
// upgrade, etcd, health, upgrade-k8s, ...), as Talos's cmd/talosctl/cmd/talos
// does. What acts on a whole cluster is a library call into
// internal/cluster; the commands wire flags to it and print.
package talos
