package server

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/containers"
)

// containerSource is where a containers or stats request is answered:
// with the CRI (pods first, the CRI's statuses) or over the containerd
// API in a namespace of one of the node's two containerd instances.
type containerSource struct {
	addr      string
	namespace string
	cri       bool
}

// containerSourceOf picks the instance as Talos does: the system
// namespace is the system containerd's, any other the CRI containerd's;
// the CRI driver answers for k8s.io only.
func (m *machineServer) containerSourceOf(namespace string, driver common.ContainerDriver) (containerSource, error) {
	rt := m.node.Runtime()

	switch driver {
	case common.ContainerDriver_CRI:
		if namespace != "" && namespace != containers.K8sNamespace {
			return containerSource{}, status.Errorf(codes.InvalidArgument, "the CRI driver serves namespace %s only, not %q", containers.K8sNamespace, namespace)
		}

		return containerSource{addr: rt.CRISocket, namespace: containers.K8sNamespace, cri: true}, nil
	case common.ContainerDriver_CONTAINERD:
		switch namespace {
		case "":
			return containerSource{}, status.Errorf(codes.InvalidArgument, "a containerd namespace is required (%s or %s)", containers.SystemNamespace, containers.K8sNamespace)
		case containers.SystemNamespace:
			return containerSource{addr: rt.SystemSocket, namespace: namespace}, nil
		default:
			return containerSource{addr: rt.CRISocket, namespace: namespace}, nil
		}
	default:
		return containerSource{}, status.Errorf(codes.InvalidArgument, "unsupported container driver %d", driver)
	}
}

// Containers lists the containers of a namespace (talosctl containers),
// or with the CRI driver the pods and their containers (-k).
func (m *machineServer) Containers(ctx context.Context, req *machine.ContainersRequest) (*machine.ContainersResponse, error) {
	src, err := m.containerSourceOf(req.GetNamespace(), req.GetDriver())
	if err != nil {
		return nil, err
	}

	var cs []containers.Container

	if src.cri {
		cs, err = containers.ListCRI(ctx, src.addr)
	} else {
		cs, err = containers.List(ctx, src.addr, src.namespace)
	}

	if err != nil {
		return nil, containersError(err)
	}

	infos := make([]*machine.ContainerInfo, len(cs))

	for i, c := range cs {
		infos[i] = &machine.ContainerInfo{
			Namespace:        c.Namespace,
			Id:               c.Display,
			Image:            c.Image,
			Pid:              c.PID,
			Status:           c.Status,
			PodId:            c.PodID,
			Name:             c.Name,
			NetworkNamespace: c.NetworkNamespace,
			InternalId:       c.ID,
			Uid:              c.UID,
		}
	}

	return &machine.ContainersResponse{Messages: []*machine.Container{{Containers: infos}}}, nil
}

// Stats is each container's memory and CPU use (talosctl stats).
func (m *machineServer) Stats(ctx context.Context, req *machine.StatsRequest) (*machine.StatsResponse, error) {
	src, err := m.containerSourceOf(req.GetNamespace(), req.GetDriver())
	if err != nil {
		return nil, err
	}

	var ss []containers.Stat

	if src.cri {
		ss, err = containers.StatsCRI(ctx, src.addr)
	} else {
		ss, err = containers.Stats(ctx, src.addr, src.namespace)
	}

	if err != nil {
		return nil, containersError(err)
	}

	stats := make([]*machine.Stat, len(ss))

	for i, s := range ss {
		stats[i] = &machine.Stat{
			Namespace:   s.Namespace,
			Id:          s.Display,
			MemoryUsage: s.MemoryUsage,
			CpuUsage:    s.CPUUsage,
			PodId:       s.PodID,
			Name:        s.Name,
		}
	}

	return &machine.StatsResponse{Messages: []*machine.Stats{{Stats: stats}}}, nil
}

// containerLogs streams a Kubernetes container's CRI log file, lines as
// they are ("<RFC3339Nano> stdout|stderr F|P <message>"), from tail_lines
// back, following it across the kubelet's rotations if asked.
func (m *machineServer) containerLogs(req *machine.LogsRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	path, err := containers.LogPath(srv.Context(), m.node.Runtime().CRISocket, req.GetId())
	if err != nil {
		return containersError(err)
	}

	rd, err := containers.OpenLog(srv.Context(), path, int(req.GetTailLines()), req.GetFollow())
	if err != nil {
		return containersError(err)
	}
	defer rd.Close()

	return sendChunks(srv, rd)
}

// imageNamespace is the CRI containerd's namespace an image request is
// about: talosctl image --namespace system|cri.
func imageNamespace(ns common.ContainerdNamespace) (string, error) {
	switch ns {
	case common.ContainerdNamespace_NS_SYSTEM:
		return containers.SystemNamespace, nil
	case common.ContainerdNamespace_NS_CRI:
		return containers.K8sNamespace, nil
	default:
		return "", status.Errorf(codes.InvalidArgument, "image namespace %s: use NS_SYSTEM or NS_CRI", ns)
	}
}

// ImageList streams the images of the CRI containerd's system or k8s.io
// namespace, one message each.
func (m *machineServer) ImageList(req *machine.ImageListRequest, srv grpc.ServerStreamingServer[machine.ImageListResponse]) error {
	ns, err := imageNamespace(req.GetNamespace())
	if err != nil {
		return err
	}

	imgs, err := containers.Images(srv.Context(), m.node.Runtime().CRISocket, ns)
	if err != nil {
		return containersError(err)
	}

	for _, img := range imgs {
		if err := srv.Send(&machine.ImageListResponse{
			Name:      img.Name,
			Digest:    img.Digest,
			Size:      img.Size,
			CreatedAt: timestamppb.New(img.CreatedAt),
		}); err != nil {
			return err
		}
	}

	return nil
}

// ImagePull pulls an image into the CRI containerd, through the registry
// mirrors of the machine config as the CRI itself would.
func (m *machineServer) ImagePull(ctx context.Context, req *machine.ImagePullRequest) (*machine.ImagePullResponse, error) {
	ns, err := imageNamespace(req.GetNamespace())
	if err != nil {
		return nil, err
	}

	if req.GetReference() == "" {
		return nil, status.Error(codes.InvalidArgument, "image pull: a reference is required")
	}

	rt := m.node.Runtime()

	if _, err := containers.Pull(ctx, rt.CRISocket, ns, req.GetReference(), rt.HostsDir); err != nil {
		return nil, containersError(err)
	}

	return &machine.ImagePullResponse{Messages: []*machine.ImagePull{{}}}, nil
}

// containersError gives an error of package containers its status code.
func containersError(err error) error {
	switch {
	case errors.Is(err, containers.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, containers.ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, containers.ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	default:
		return status.Error(codes.Internal, err.Error())
	}
}
