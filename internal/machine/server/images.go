package server

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/containers"
)

// imageServer is Talos's ImageService over the node's CRI containerd.
type imageServer struct {
	machine.UnimplementedImageServiceServer

	m *machineServer
}

// instanceNamespace is the containerd namespace an instance names. The
// CRI's namespace is the default, as Talos's talosctl sends it.
func instanceNamespace(in *common.ContainerdInstance) (string, error) {
	if in.GetNamespace() == common.ContainerdNamespace_NS_UNKNOWN {
		return containers.K8sNamespace, nil
	}

	return imageNamespace(in.GetNamespace())
}

// List streams the images of a namespace.
func (s *imageServer) List(req *machine.ImageServiceListRequest, srv grpc.ServerStreamingServer[machine.ImageServiceListResponse]) error {
	ns, err := instanceNamespace(req.GetContainerd())
	if err != nil {
		return err
	}

	imgs, err := containers.Images(srv.Context(), s.m.node.Runtime().CRISocket, ns)
	if err != nil {
		return containersError(err)
	}

	for _, img := range imgs {
		if err := srv.Send(&machine.ImageServiceListResponse{
			Name: img.Name, Digest: img.Digest, Size: img.Size, CreatedAt: timestamppb.New(img.CreatedAt),
		}); err != nil {
			return err
		}
	}

	return nil
}

// Pull pulls through the machine config's mirrors, as MachineService's
// ImagePull; it sends the image's name when done, without per-layer
// progress.
func (s *imageServer) Pull(req *machine.ImageServicePullRequest, srv grpc.ServerStreamingServer[machine.ImageServicePullResponse]) error {
	ns, err := instanceNamespace(req.GetContainerd())
	if err != nil {
		return err
	}

	if req.GetImageRef() == "" {
		return status.Error(codes.InvalidArgument, "image pull: a reference is required")
	}

	rt := s.m.node.Runtime()

	img, err := containers.Pull(srv.Context(), rt.CRISocket, ns, req.GetImageRef(), rt.HostsDir)
	if err != nil {
		return containersError(err)
	}

	return srv.Send(&machine.ImageServicePullResponse{Response: &machine.ImageServicePullResponse_Name{Name: img.Name}})
}

// Import reads an image archive streamed in chunks after a first message
// naming the containerd instance, and imports every image it names.
func (s *imageServer) Import(srv grpc.ClientStreamingServer[machine.ImageServiceImportRequest, machine.ImageServiceImportResponse]) error {
	first, err := srv.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return status.Error(codes.InvalidArgument, "image import: the stream ended before its first message")
		}

		return err
	}

	if first.GetContainerd() == nil {
		return status.Error(codes.InvalidArgument, "image import: the first message must name the containerd instance")
	}

	ns, err := instanceNamespace(first.GetContainerd())
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(srv.Context())
	defer cancel()

	// The archive is piped to containerd as it arrives: apid runs in PID 1
	// and must not hold an image in memory. The stream's own failure is
	// kept before the pipe is closed with it, so that an import that
	// stopped on it reports the stream's status, not the archive's.
	pr, pw := io.Pipe()
	streamErr := make(chan error, 1)

	go func() {
		err := copyChunks(srv, pw)
		streamErr <- err
		pw.CloseWithError(err)
	}()

	imgs, err := containers.Import(ctx, s.m.node.Runtime().CRISocket, ns, pr)

	// Unblock the receiving goroutine whatever Import read.
	pr.CloseWithError(errImportDone)

	if err != nil {
		select {
		case serr := <-streamErr:
			if serr != nil && !errors.Is(serr, errImportDone) {
				return status.Convert(serr).Err()
			}
		default:
		}

		return containersError(err)
	}

	for _, img := range imgs {
		fmt.Fprintf(s.m.log, "image import: %s (%s)\n", img.Name, img.Digest)
	}

	return srv.SendAndClose(&machine.ImageServiceImportResponse{Name: imgs[0].Name})
}

var errImportDone = errors.New("image import: done")

// copyChunks writes the chunks of an import stream to w until the client
// closes it. A message that is not a chunk is an error.
func copyChunks(srv grpc.ClientStreamingServer[machine.ImageServiceImportRequest, machine.ImageServiceImportResponse], w io.Writer) error {
	for {
		msg, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}

		if err != nil {
			return err
		}

		chunk := msg.GetImageChunk()
		if chunk == nil {
			return status.Error(codes.InvalidArgument, "image import: every message after the first must be an image chunk")
		}

		if _, err := w.Write(chunk.GetBytes()); err != nil {
			return err
		}
	}
}

// Remove deletes an image and the CRI's aliases of it.
func (s *imageServer) Remove(ctx context.Context, req *machine.ImageServiceRemoveRequest) (*emptypb.Empty, error) {
	ns, err := instanceNamespace(req.GetContainerd())
	if err != nil {
		return nil, err
	}

	if req.GetImageRef() == "" {
		return nil, status.Error(codes.InvalidArgument, "image remove: a reference is required")
	}

	if err := containers.Remove(ctx, s.m.node.Runtime().CRISocket, ns, req.GetImageRef()); err != nil {
		return nil, containersError(err)
	}

	fmt.Fprintf(s.m.log, "image remove: %s\n", req.GetImageRef())

	return &emptypb.Empty{}, nil
}
