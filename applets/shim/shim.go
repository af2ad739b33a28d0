// Package shim is containerd's runc shim (containerd-shim-runc-v2) as an
// applet: one process per pod or container that keeps it running while
// containerd restarts. Linked in, it costs 0.6 MB instead of a separate
// 14.3 MB binary.
package shim

import (
	"context"
	"os"

	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task"
	"github.com/containerd/containerd/v2/pkg/shim"
	"github.com/containerd/containerd/v2/pkg/shutdown"
	"github.com/containerd/containerd/v2/plugins"
	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"

	"github.com/talosbox/talosbox/internal/applet"
)

// Name is the binary name containerd looks for on PATH for runtime
// io.containerd.runc.v2.
const Name = "containerd-shim-runc-v2"

// Applet is the shim's entry in the multicall table.
var Applet = applet.Applet{
	Name:    Name,
	Summary: "containerd's runc shim, started by containerd for each container",
	Main:    run,
}

func run(_ context.Context, args []string, _ applet.Env) int {
	// The shim parses os.Args itself (flag package) and exits the process
	// when it is done; it never returns on success. Its start command runs
	// /proc/self/exe with shim flags only: the environment says which
	// applet that is.
	os.Args = append([]string{Name}, args...)
	_ = os.Setenv(applet.AppletEnv, Name)

	// The shim initialises every plugin registered in the process, and in
	// this binary the daemon's (CRI, snapshotters, ...) are registered
	// too: a shim must start from the task service alone.
	registry.Reset()
	registry.Register(taskPlugin())

	shim.RunShim(context.Background(), manager.NewShimManager("io.containerd.runc.v2"))

	return 0
}

// taskPlugin is the registration of cmd/containerd-shim-runc-v2/task/plugin,
// which is not imported: its init would put the shim's task service among
// the daemon's plugins.
func taskPlugin() *plugin.Registration {
	return &plugin.Registration{
		Type:     plugins.TTRPCPlugin,
		ID:       "task",
		Requires: []plugin.Type{plugins.EventPlugin, plugins.InternalPlugin},
		InitFn: func(ic *plugin.InitContext) (any, error) {
			pp, err := ic.GetByID(plugins.EventPlugin, "publisher")
			if err != nil {
				return nil, err
			}

			ss, err := ic.GetByID(plugins.InternalPlugin, "shutdown")
			if err != nil {
				return nil, err
			}

			return task.NewTaskService(ic.Context, pp.(shim.Publisher), ss.(shutdown.Service))
		},
	}
}
