package server

import (
	"context"
	"errors"
	"syscall"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/containers"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// Restart is `talosctl restart`: Talos sends the container's task
// SIGTERM and lets its owner start it again. A Kubernetes container is
// restarted by its kubelet that way. In the system namespace a talosbox
// service may run as a goroutine rather than a container, so an ID the
// supervisor knows is restarted through it (what the signal would have
// led to, without waiting for a crash-loop backoff).
func (m *machineServer) Restart(ctx context.Context, req *machine.RestartRequest) (*machine.RestartResponse, error) {
	src, err := m.containerSourceOf(req.GetNamespace(), req.GetDriver())
	if err != nil {
		return nil, err
	}

	if src.namespace == containers.SystemNamespace && !src.cri {
		if sup, err := m.supervisor(); err == nil {
			if err := checkControllable(req.GetId(), "restart"); err != nil {
				return nil, err
			}

			err := sup.Restart(ctx, req.GetId())
			if err == nil {
				return &machine.RestartResponse{Messages: []*machine.Restart{{}}}, nil
			}

			if !errors.Is(err, supervisor.ErrUnknownService) {
				return nil, serviceError(err)
			}
		}
	}

	if err := containers.Kill(ctx, src.addr, src.namespace, req.GetId(), syscall.SIGTERM); err != nil {
		return nil, containersError(err)
	}

	return &machine.RestartResponse{Messages: []*machine.Restart{{}}}, nil
}
