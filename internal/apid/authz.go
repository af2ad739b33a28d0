package apid

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/talosbox/talosbox/internal/role"
)

// Metadata keys of node-to-node forwarding, as Talos names them.
const (
	mdNode      = "node"
	mdNodes     = "nodes"
	mdRole      = "talos-role"
	mdProxyFrom = "proxyfrom"
)

// caller is who is calling, as the interceptors established it.
type caller struct {
	roles []role.Role
	// maintenance: no client certificate was asked for; only the
	// maintenance allow-list reaches the handlers.
	maintenance bool
	// forwarded: another node's apid called for a client of its own;
	// roles are the ones it forwarded.
	forwarded bool
	// local: a process of this node, through the local socket.
	local bool
}

func (c *caller) admin() bool { return c != nil && role.Has(c.roles, role.Admin) }

type callerKey struct{}

func callerFrom(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// generation is one gRPC server's view: the identity it was started
// with decides its mode, whatever the node does later.
type generation struct {
	s  *Server
	id *identity
}

// authenticate finds the caller's roles: the client certificate's
// organizations, or, for another node's apid (os:impersonator), the roles
// it forwarded. Forwarded roles pass through the same table, so an
// impersonator never gets more than the original caller had.
func (g *generation) authenticate(ctx context.Context) (*caller, error) {
	if g.id.maintenance {
		return &caller{maintenance: true}, nil
	}

	if g.id.local {
		return &caller{roles: []role.Role{role.Reader}, local: true}, nil
	}

	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "apid: no peer")
	}

	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil, status.Error(codes.Unauthenticated, "apid: no verified client certificate")
	}

	roles := parseRoles(info.State.VerifiedChains[0][0].Subject.Organization)
	if !role.Has(roles, role.Impersonator) {
		return &caller{roles: roles}, nil
	}

	md, _ := metadata.FromIncomingContext(ctx)

	fwd := parseRoles(md.Get(mdRole))
	// An impersonator cannot forward the impersonator role itself: that
	// would let a chain of forwards launder roles.
	fwd = role.Without(fwd, role.Impersonator)

	return &caller{roles: fwd, forwarded: true}, nil
}

// authorize is the one gate every call passes: the maintenance allow-list
// or the role table.
func (g *generation) authorize(ctx context.Context, method string) (*caller, error) {
	c, err := g.authenticate(ctx)
	if err != nil {
		return nil, err
	}

	if c.maintenance {
		if !maintenanceMethods[method] {
			return nil, maintenanceDenied(method)
		}

		return c, nil
	}

	if !allowed(method, c.roles) {
		if _, known := methodRoles[method]; !known {
			return nil, status.Errorf(codes.PermissionDenied, "apid: %s is not served", method)
		}

		return nil, status.Errorf(codes.PermissionDenied, "apid: access to %s denied: it needs one of %s, the caller has %s",
			method, role.Format(methodRoles[method]), role.Format(c.roles))
	}

	return c, nil
}

// unary authorizes, routes and stamps a unary call.
func (g *generation) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := checkSize(info.FullMethod, req); err != nil {
		return nil, err
	}

	c, err := g.authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}

	ctx = context.WithValue(ctx, callerKey{}, c)

	target, err := g.route(ctx, c)
	if err != nil {
		return nil, err
	}

	if target != "" {
		return g.s.remote.forwardUnary(ctx, target, info.FullMethod, req, c.roles, g.id.hostname)
	}

	resp, err := handler(ctx, req)
	if err == nil {
		if m, ok := resp.(proto.Message); ok {
			stampHostname(m, g.id.hostname)
		}
	}

	return resp, err
}

// stream does the same for streaming calls.
func (g *generation) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	c, err := g.authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}

	ctx := context.WithValue(ss.Context(), callerKey{}, c)

	target, err := g.route(ctx, c)
	if err != nil {
		return err
	}

	ws := &serverStream{ServerStream: ss, ctx: ctx, method: info.FullMethod, hostname: g.id.hostname}

	if target != "" {
		// The other node stamps its own name: no stamping here.
		ws.hostname = ""
		return g.s.remote.forwardStream(ctx, target, info.FullMethod, ws, info.IsClientStream, info.IsServerStream, c.roles, g.id.hostname)
	}

	return handler(srv, ws)
}

// serverStream carries the caller in its context, checks the request's
// size and stamps the node's name into what it sends.
type serverStream struct {
	grpc.ServerStream
	ctx      context.Context
	method   string
	hostname string
}

func (s *serverStream) Context() context.Context { return s.ctx }

func (s *serverStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}

	return checkSize(s.method, m)
}

func (s *serverStream) SendMsg(m any) error {
	if pm, ok := m.(proto.Message); ok && s.hostname != "" {
		stampHostname(pm, s.hostname)
	}

	return s.ServerStream.SendMsg(m)
}

// route says where a call goes: "" to serve it here, or the node (host or
// host:port) whose apid gets it. A call another apid forwarded is always
// served here, so forwarding never loops.
func (g *generation) route(ctx context.Context, c *caller) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)

	if c.local && len(md.Get(mdNode)) > 0 {
		return "", status.Error(codes.InvalidArgument, "apid: the local socket serves this node only")
	}

	if c.forwarded || c.local || len(md.Get(mdProxyFrom)) > 0 {
		return "", nil
	}

	if len(md.Get(mdNodes)) > 0 {
		return "", status.Error(codes.InvalidArgument, `apid: "nodes" metadata (one-to-many) is not supported: name one node per call, the client fans out`)
	}

	nodes := md.Get(mdNode)

	switch len(nodes) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", status.Errorf(codes.InvalidArgument, "apid: %d nodes in the node metadata: name one node per call", len(nodes))
	}

	host, port, err := splitNode(nodes[0])
	if err != nil {
		return "", status.Errorf(codes.InvalidArgument, "apid: node %q: %v", nodes[0], err)
	}

	own, _ := g.s.ownPort.Load().(string)
	if g.id.isLocal(host, port, own) {
		return "", nil
	}

	if g.id.maintenance {
		return "", status.Errorf(codes.FailedPrecondition, "apid: maintenance mode: cannot forward to node %q", nodes[0])
	}

	remote := fmt.Sprint(g.s.opts.RemotePort)

	switch {
	case port == "":
		port = remote
	case port != remote && !g.s.opts.NodePorts:
		return "", status.Errorf(codes.InvalidArgument, "apid: node %q: nodes are reached on port %s; name the node without a port", nodes[0], remote)
	}

	return joinHostPort(host, port), nil
}
