// Command talosbox is one statically linked binary that is every part of a
// Talos-style node: PID 1, the node API, trustd, networkd, etcd and talosctl.
// It picks its personality from argv[0] or from its first argument.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/talosbox/talosbox/applets/apid"
	"github.com/talosbox/talosbox/applets/containerd"
	"github.com/talosbox/talosbox/applets/etcd"
	"github.com/talosbox/talosbox/applets/imager"
	"github.com/talosbox/talosbox/applets/initramfs"
	"github.com/talosbox/talosbox/applets/machined"
	"github.com/talosbox/talosbox/applets/modprobe"
	"github.com/talosbox/talosbox/applets/networkd"
	"github.com/talosbox/talosbox/applets/shim"
	"github.com/talosbox/talosbox/applets/talosctl"
	"github.com/talosbox/talosbox/applets/trustd"
	"github.com/talosbox/talosbox/internal/applet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)

	code := multicall().Run(ctx, os.Args, applet.OSEnv())

	stop()
	os.Exit(code)
}

func multicall() *applet.Multicall {
	return &applet.Multicall{
		Name: "talosbox",
		Applets: []applet.Applet{
			machined.Applet,
			apid.Applet,
			trustd.Applet,
			networkd.Applet,
			etcd.Applet,
			talosctl.Applet,
			initramfs.Applet,
			imager.Applet,
			containerd.Applet,
			shim.Applet,
			modprobe.Applet,
		},
	}
}
