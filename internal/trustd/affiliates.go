package trustd

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/discovery"
)

// Affiliates stores the caller's record in the cluster's registry and
// returns every record: discovery for nodes without an etcd certificate.
func (svc *service) Affiliates(ctx context.Context, req *security.AffiliatesRequest) (*security.AffiliatesResponse, error) {
	reg := svc.s.registry
	if reg == nil {
		return nil, status.Error(codes.Unimplemented, "trustd: no discovery registry on this node")
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

	resp := &security.AffiliatesResponse{Affiliates: make([]*security.Affiliate, 0, len(list))}
	for _, a := range list {
		resp.Affiliates = append(resp.Affiliates, affiliateToProto(a))
	}

	return resp, nil
}

func affiliateFromProto(p *security.Affiliate) (discovery.AffiliateSpec, error) {
	if p == nil {
		return discovery.AffiliateSpec{}, errors.New("trustd: no affiliate record")
	}

	a := discovery.AffiliateSpec{
		NodeID: p.GetNodeId(), Hostname: p.GetHostname(), Nodename: p.GetNodename(),
		MachineType: p.GetMachineType(), OperatingSystem: p.GetOperatingSystem(),
	}

	for _, s := range p.GetAddresses() {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return discovery.AffiliateSpec{}, fmt.Errorf("trustd: affiliate %s: %w", a.NodeID, err)
		}

		a.Addresses = append(a.Addresses, ip)
	}

	return a, a.Validate()
}

func affiliateToProto(a discovery.AffiliateSpec) *security.Affiliate {
	p := &security.Affiliate{
		NodeId: a.NodeID, Hostname: a.Hostname, Nodename: a.Nodename,
		MachineType: a.MachineType, OperatingSystem: a.OperatingSystem,
	}

	for _, ip := range a.Addresses {
		p.Addresses = append(p.Addresses, ip.String())
	}

	return p
}

// Registry is a discovery registry reached through trustd on the control
// plane, for nodes that cannot reach etcd themselves.
type Registry struct {
	// Endpoints are control-plane nodes, as in SignRequest; each call tries
	// them in order until one answers.
	Endpoints []string
	Token     string
	// Trust verifies trustd's certificate (required: the token is sent).
	Trust *x509.CertPool

	last []discovery.AffiliateSpec
}

// Publish sends the record and keeps the cluster's answer for List.
func (r *Registry) Publish(ctx context.Context, a discovery.AffiliateSpec) error {
	endpoints, err := endpointAddrs(r.Endpoints)
	if err != nil {
		return err
	}

	if r.Token == "" || r.Trust == nil {
		return errors.New("trustd: discovery needs the machine token and the cluster's CAs")
	}

	var errs []string

	for _, ep := range endpoints {
		list, err := r.affiliatesOnce(ctx, ep, a)
		if err == nil {
			r.last = list
			return nil
		}

		errs = append(errs, ep+": "+err.Error())
	}

	return fmt.Errorf("trustd: discovery: %s", strings.Join(errs, "; "))
}

// List returns what the last Publish got back.
func (r *Registry) List(context.Context) ([]discovery.AffiliateSpec, error) { return r.last, nil }

func (r *Registry) affiliatesOnce(ctx context.Context, endpoint string, self discovery.AffiliateSpec) ([]discovery.AffiliateSpec, error) {
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()

	conn, err := dial(endpoint, r.Token, r.Trust)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	resp, err := security.NewSecurityServiceClient(conn).Affiliates(ctx, &security.AffiliatesRequest{Self: affiliateToProto(self)})
	if err != nil {
		return nil, err
	}

	out := make([]discovery.AffiliateSpec, 0, len(resp.GetAffiliates()))

	for _, p := range resp.GetAffiliates() {
		if a, err := affiliateFromProto(p); err == nil {
			out = append(out, a)
		}
	}

	return out, nil
}
