// Package machined is PID 1: mounts, the boot sequence, the service
// supervisor and the machine config. It answers to "init" as well.
package machined

import "github.com/talosbox/talosbox/internal/applet"

// Applet is machined's entry in the multicall table.
var Applet = applet.Pending("machined", "PID 1: boot sequence, service supervisor, machine config",
	"Run as PID 1 (or as 'init'): mount pseudo filesystems, acquire the machine config,\nstart apid, trustd, networkd and etcd on one in-process resource bus, and\nhandle reset, reboot and upgrade.",
	"issue 4", "init")
