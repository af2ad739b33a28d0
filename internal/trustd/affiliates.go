package trustd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// Affiliates stores the caller's record in the cluster's registry and
// returns every record: discovery for nodes without an etcd certificate.
func (svc *service) Affiliates(ctx context.Context, req *security.AffiliatesRequest) (*security.AffiliatesResponse, error) {
	reg := svc.s.registry
	if reg == nil {
		return nil, status.Error(codes.Unimplemented, "trustd: no discovery registry on this node")
	}

	if req.GetLeave() {
		return svc.leave(ctx, req.GetSelf().GetNodeId())
	}

	self, err := affiliateFromProto(req.GetSelf())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	if err := reg.Publish(ctx, self); err != nil {
		return nil, status.Errorf(codes.Unavailable, "trustd: discovery registry: %v", err)
	}

	list, err := reg.List(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "trustd: discovery registry: %v", err)
	}

	return affiliatesResponse(list), nil
}

// leave deletes nodeID's record. Whoever holds the token may publish any
// record already, so deleting one grants nothing more.
func (svc *service) leave(ctx context.Context, nodeID string) (*security.AffiliatesResponse, error) {
	rm, ok := svc.s.registry.(discovery.Remover)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "trustd: this node's discovery registry cannot delete records")
	}

	if err := cluster.ValidateNodeID(nodeID); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	if err := rm.Remove(ctx, nodeID); err != nil {
		return nil, status.Errorf(codes.Unavailable, "trustd: discovery registry: %v", err)
	}

	return &security.AffiliatesResponse{}, nil
}

// WatchAffiliates sends the registry's list once the shared watch has it,
// then again after every change, until the worker hangs up or the watch
// breaks (Unavailable: the worker polls and comes back).
func (svc *service) WatchAffiliates(_ *security.WatchAffiliatesRequest, stream grpc.ServerStreamingServer[security.AffiliatesResponse]) error {
	feed := svc.s.feed
	if feed == nil {
		return status.Error(codes.Unimplemented, "trustd: no discovery watch on this node")
	}

	select {
	case svc.s.watchSlots <- struct{}{}:
		defer func() { <-svc.s.watchSlots }()
	default:
		return status.Errorf(codes.ResourceExhausted, "trustd: %d workers watch already: poll instead", MaxWatchers)
	}

	rd := feed.Subscribe()
	defer rd.Close()

	ctx := stream.Context()

	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-svc.stopping:
			return status.Error(codes.Unavailable, "trustd: stopping")
		case _, ok := <-rd.C():
			if !ok {
				return status.Errorf(codes.Unavailable, "trustd: discovery watch: %v", rd.Err())
			}

			list, _ := rd.List()
			if err := stream.Send(affiliatesResponse(list)); err != nil {
				return err
			}
		}
	}
}

func affiliatesResponse(list []cluster.AffiliateSpec) *security.AffiliatesResponse {
	resp := &security.AffiliatesResponse{Affiliates: make([]*security.Affiliate, 0, len(list))}
	for _, a := range list {
		resp.Affiliates = append(resp.Affiliates, affiliateToProto(a))
	}

	return resp
}

// affiliatesFromProto keeps the records that validate: one bad record
// must not hide the rest.
func affiliatesFromProto(resp *security.AffiliatesResponse) []cluster.AffiliateSpec {
	out := make([]cluster.AffiliateSpec, 0, len(resp.GetAffiliates()))

	for _, p := range resp.GetAffiliates() {
		if a, err := affiliateFromProto(p); err == nil {
			out = append(out, a)
		}
	}

	return out
}

func affiliateFromProto(p *security.Affiliate) (cluster.AffiliateSpec, error) {
	if p == nil {
		return cluster.AffiliateSpec{}, errors.New("trustd: no affiliate record")
	}

	a := cluster.AffiliateSpec{
		NodeID: p.GetNodeId(), Hostname: p.GetHostname(), Nodename: p.GetNodename(),
		MachineType: p.GetMachineType(), OperatingSystem: p.GetOperatingSystem(),
	}

	if cp := p.GetControlPlane(); cp != nil {
		a.ControlPlane = &cluster.ControlPlane{APIServerPort: int(cp.GetApiServerPort())}
	}

	for _, s := range p.GetAddresses() {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return cluster.AffiliateSpec{}, fmt.Errorf("trustd: affiliate %s: %w", a.NodeID, err)
		}

		a.Addresses = append(a.Addresses, ip)
	}

	return a, a.Validate()
}

func affiliateToProto(a cluster.AffiliateSpec) *security.Affiliate {
	p := &security.Affiliate{
		NodeId: a.NodeID, Hostname: a.Hostname, Nodename: a.Nodename,
		MachineType: a.MachineType, OperatingSystem: a.OperatingSystem,
	}

	if a.ControlPlane != nil {
		p.ControlPlane = &security.ControlPlane{ApiServerPort: int32(a.ControlPlane.APIServerPort)} //nolint:gosec // validated: a port
	}

	for _, ip := range a.Addresses {
		p.Addresses = append(p.Addresses, ip.String())
	}

	return p
}
