// Package etcd is the embedded etcd server: bootstrap, join, leave and
// snapshot.
package etcd

import "github.com/talosbox/talosbox/internal/applet"

// Applet is etcd's entry in the multicall table.
var Applet = applet.Pending("etcd", "embedded etcd server: bootstrap, join, leave, snapshot",
	"Run an embedded etcd member: bootstrap a new cluster, join an existing one as\na learner, leave it, and take snapshots.",
	"issue 8")
