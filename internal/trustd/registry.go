package trustd

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/talosbox/talosbox/internal/api/security"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// Registry is a discovery registry reached through trustd on the control
// plane, for nodes that cannot reach etcd themselves. It is a
// discovery.Watcher (WatchAffiliates) and a discovery.Remover.
type Registry struct {
	// Endpoints are control-plane nodes, as in SignRequest; each call tries
	// them in order until one answers.
	Endpoints []string
	Token     string
	// Trust verifies trustd's certificate (required: the token is sent).
	Trust *x509.CertPool

	// last is what the last Publish got back. Only the caller of Publish
	// and List touches it: Watch and Remove leave it alone, so they may
	// run on goroutines of their own.
	last []cluster.AffiliateSpec
}

var (
	_ discovery.Watcher = (*Registry)(nil)
	_ discovery.Remover = (*Registry)(nil)
)

// Publish sends the record and keeps the cluster's answer for List.
func (r *Registry) Publish(ctx context.Context, a cluster.AffiliateSpec) error {
	return r.each(ctx, "discovery", func(conn *grpc.ClientConn) error {
		resp, err := callAffiliates(ctx, conn, &security.AffiliatesRequest{Self: affiliateToProto(a)})
		if err == nil {
			r.last = affiliatesFromProto(resp)
		}

		return err
	})
}

// List returns what the last Publish got back.
func (r *Registry) List(context.Context) ([]cluster.AffiliateSpec, error) { return r.last, nil }

// Remove deletes nodeID's record on the control plane.
func (r *Registry) Remove(ctx context.Context, nodeID string) error {
	return r.each(ctx, "discovery leave", func(conn *grpc.ClientConn) error {
		_, err := callAffiliates(ctx, conn, &security.AffiliatesRequest{Self: &security.Affiliate{NodeId: nodeID}, Leave: true})
		return err
	})
}

func callAffiliates(ctx context.Context, conn *grpc.ClientConn, req *security.AffiliatesRequest) (*security.AffiliatesResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()

	return security.NewSecurityServiceClient(conn).Affiliates(ctx, req)
}

// each calls fn on a connection to each endpoint in turn until one
// succeeds. A fresh connection per call, as for certificates: discovery
// calls are seconds apart, and each re-verifies trustd.
func (r *Registry) each(ctx context.Context, what string, fn func(*grpc.ClientConn) error) error {
	endpoints, err := r.endpoints()
	if err != nil {
		return err
	}

	var errs endpointErrors

	for _, ep := range endpoints {
		err := r.withConn(ep, fn)
		if err == nil {
			return nil
		}

		errs = append(errs, fmt.Errorf("%s: %w", ep, err))

		if ctx.Err() != nil {
			break
		}
	}

	return fmt.Errorf("trustd: %s: %w", what, errs)
}

// endpointErrors are what each endpoint answered, on one line; they stay
// wrapped, so the caller can read their gRPC status.
type endpointErrors []error

func (e endpointErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}

	return strings.Join(msgs, "; ")
}

func (e endpointErrors) Unwrap() []error { return e }

func (r *Registry) withConn(endpoint string, fn func(*grpc.ClientConn) error, opts ...grpc.DialOption) error {
	conn, err := dial(endpoint, r.Token, r.Trust, opts...)
	if err != nil {
		return err
	}
	defer conn.Close()

	return fn(conn)
}

func (r *Registry) endpoints() ([]string, error) {
	endpoints, err := endpointAddrs(r.Endpoints)
	if err != nil {
		return nil, err
	}

	if r.Token == "" || r.Trust == nil {
		return nil, errors.New("trustd: discovery needs the machine token and the cluster's CAs")
	}

	return endpoints, nil
}

// Watch follows the cluster's records through the WatchAffiliates stream
// of the first endpoint that takes it, and returns when that stream
// breaks: the caller watches again after a backoff, starting over from the
// first endpoint.
func (r *Registry) Watch(ctx context.Context, changed func([]cluster.AffiliateSpec)) error {
	endpoints, err := r.endpoints()
	if err != nil {
		return err
	}

	var errs endpointErrors

	for _, ep := range endpoints {
		established := false
		err := r.withConn(ep, func(conn *grpc.ClientConn) error {
			return watchStream(ctx, conn, &established, changed)
		}, grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}))

		switch {
		case ctx.Err() != nil:
			return nil
		case established:
			return fmt.Errorf("trustd: discovery watch on %s: %w", ep, err)
		}

		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}

	return fmt.Errorf("trustd: discovery watch: %w", errs)
}

// watchStream reads one stream until it breaks; established is set once
// the first list came.
func watchStream(ctx context.Context, conn *grpc.ClientConn, established *bool, changed func([]cluster.AffiliateSpec)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The first list must come within an attempt's time, as a call's
	// answer would; after that the stream is quiet while nothing
	// changes, and keepalive pings watch the peer.
	first := time.AfterFunc(AttemptTimeout, cancel)

	stream, err := security.NewSecurityServiceClient(conn).WatchAffiliates(ctx, &security.WatchAffiliatesRequest{})
	if err != nil {
		first.Stop()
		return err
	}

	for {
		resp, err := stream.Recv()
		if !*established && !first.Stop() {
			return fmt.Errorf("no list within %v", AttemptTimeout)
		}

		if err != nil {
			return err
		}

		*established = true

		changed(affiliatesFromProto(resp))
	}
}
