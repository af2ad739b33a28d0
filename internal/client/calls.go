package client

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
)

// The calls here are the node API's answers a caller reads whole: talosctl's
// commands and the cluster checks share them, each taking a context already
// routed to its node (WithNode, or a fan-out's).

// FirstMessage checks a unary reply holding per-node messages: apid may
// report a node's failure inside the message rather than as a gRPC error.
func FirstMessage[M interface{ GetMetadata() *common.Metadata }](msgs []M) (M, error) {
	var zero M

	if len(msgs) == 0 {
		return zero, errors.New("empty reply")
	}

	if err := MetadataError(msgs[0].GetMetadata()); err != nil {
		return zero, err
	}

	return msgs[0], nil
}

// CopyStream writes a data stream's bytes to w until it ends; a node's
// failure reported in a message ends it with that error.
func CopyStream(stream grpc.ServerStreamingClient[common.Data], w io.Writer) error {
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}

		if err != nil {
			return err
		}

		if err := MetadataError(msg.GetMetadata()); err != nil {
			return err
		}

		if _, err := w.Write(msg.GetBytes()); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
}

// Services is the node's service list.
func (c *Client) Services(ctx context.Context) (*machine.ServiceList, error) {
	resp, err := c.Machine.ServiceList(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, err
	}

	return FirstMessage(resp.GetMessages())
}

// EtcdMembers is the etcd member list as the node sees it.
func (c *Client) EtcdMembers(ctx context.Context) (*machine.EtcdMembers, error) {
	resp, err := c.Machine.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	if err != nil {
		return nil, err
	}

	return FirstMessage(resp.GetMessages())
}

// ListResources lists every resource of a type (a name or an alias) in
// its default namespace.
func (c *Client) ListResources(ctx context.Context, typ string) ([]*resource.Resource, error) {
	stream, err := c.Resource.List(ctx, &resource.ListRequest{Type: typ})
	if err != nil {
		return nil, err
	}

	var out []*resource.Resource

	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}

		if err != nil {
			return nil, err
		}

		if err := MetadataError(msg.GetMetadata()); err != nil {
			return nil, err
		}

		if msg.GetResource() != nil {
			out = append(out, msg.GetResource())
		}
	}
}

// Kubeconfig is the admin kubeconfig a control plane hands out, taken out
// of the tar.gz the API sends it in.
func (c *Client) Kubeconfig(ctx context.Context) ([]byte, error) {
	stream, err := c.Machine.Kubeconfig(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, err
	}

	var buf bytes.Buffer
	if err := CopyStream(stream, &buf); err != nil {
		return nil, err
	}

	zr, err := gzip.NewReader(&buf)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}

	tr := tar.NewReader(zr)

	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("kubeconfig: the node's archive holds no kubeconfig")
		}

		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}

		if hdr.Name == "kubeconfig" {
			return io.ReadAll(io.LimitReader(tr, 1<<20))
		}
	}
}

// MachineStatus is the node's boot stage, from its MachineStatus resource,
// with the resource's version and creation time: a reboot shows as a newer
// creation time.
type MachineStatus struct {
	Stage   string
	Version uint64
	Created time.Time
}

// MachineStatus reads the node's MachineStatus, waiting at most
// DefaultDialTimeout for an answer.
func (c *Client) MachineStatus(ctx context.Context) (MachineStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultDialTimeout)
	defer cancel()

	resp, err := c.Resource.Get(ctx, &resource.GetRequest{Type: "machinestatus", Id: "machine"})
	if err == nil {
		err = MetadataError(resp.GetMetadata())
	}

	if err != nil {
		return MachineStatus{}, err
	}

	var spec struct {
		Stage string `yaml:"stage"`
	}

	if err := yaml.Unmarshal(resp.GetResource().GetSpecYaml(), &spec); err != nil {
		return MachineStatus{}, fmt.Errorf("machine status: %w", err)
	}

	m := resp.GetResource().GetMetadata()

	return MachineStatus{Stage: spec.Stage, Version: m.GetVersion(), Created: m.GetCreated().AsTime()}, nil
}

// ServiceHealthy is nil when the service id in a node's list runs and
// passes its health check, else why not.
func ServiceHealthy(list *machine.ServiceList, id string) error {
	for _, svc := range list.GetServices() {
		if svc.GetId() == id {
			if svc.GetState() == "Running" && svc.GetHealth().GetHealthy() {
				return nil
			}

			return fmt.Errorf("%s is %s: %s", id, svc.GetState(), svc.GetHealth().GetLastMessage())
		}
	}

	return fmt.Errorf("no %s service", id)
}
