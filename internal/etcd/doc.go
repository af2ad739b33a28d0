// Package etcd runs this node's etcd member in-process, on top of etcd's
// embed package, the way Talos runs etcd on control-plane nodes: mutual TLS
// for peers and clients from the cluster's etcd CA, a member named after the
// node, and three ways in.
//
//   - Bootstrap: the first member of a new cluster (`talosctl bootstrap`).
//     The data dir must be empty.
//   - Join: every other control-plane node. It asks the running members to add
//     it as a learner, starts, and is promoted to a voting member once it has
//     caught up, so a slow joiner never costs the cluster its quorum.
//   - Resume: the data dir already holds a member; it simply starts.
//
// A started Server hands out an in-process client (no socket, no TLS) for
// machined's own use, and the operations behind `talosctl etcd` (members,
// remove-member, forfeit-leadership, status, defrag, alarms, snapshot, leave).
// Restore turns a snapshot into a one-member data dir that Resume then serves.
//
// cluster.etcd.extraArgs are etcd flag names; Start maps the ones that make
// sense in-process onto the embedded config and refuses the flags this
// package owns (names, URLs, TLS files, cluster state): see ValidateExtraArgs.
package etcd
