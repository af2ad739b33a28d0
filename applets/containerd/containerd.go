// Package containerd is the containerd daemon, linked into the multicall
// binary as k3s does: its gRPC, protobuf, OCI and Kubernetes API code is
// shared with the rest of talosbox instead of shipped a second time (the
// applet adds 20.9 MB to the binary; a separate containerd is 39.2 MB).
//
// machined runs it twice, as Talos does: the system instance (services,
// the installer) and the CRI instance (Kubernetes, namespace k8s.io).
package containerd

import (
	"context"
	"fmt"
	"os"

	// Every plugin a stock containerd has, CRI included; the build tags
	// no_btrfs, no_devmapper and no_zfs leave out the snapshotters that
	// need C libraries.
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"
	"github.com/containerd/containerd/v2/cmd/containerd/command"

	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/images"
)

// Applet is containerd's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "containerd",
	Summary: "container runtime daemon (containerd " + images.Containerd + ", CRI included)",
	Main:    run,
}

func run(ctx context.Context, args []string, _ applet.Env) int {
	if err := command.App().Run(ctx, append([]string{"containerd"}, args...)); err != nil {
		fmt.Fprintf(os.Stderr, "containerd: %s\n", err)
		return 1
	}

	return 0
}
