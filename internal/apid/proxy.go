package apid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/talosbox/talosbox/internal/role"
)

// maxRemoteConns bounds the pool of connections to other nodes: node
// names come from clients, who must not make apid hold one per name.
const maxRemoteConns = 32

// remotePool keeps one connection per other node's apid.
type remotePool struct {
	current func() *identity

	mu    sync.Mutex
	conns map[string]*remoteConn
}

type remoteConn struct {
	cc       *grpc.ClientConn
	refs     int
	lastUsed time.Time
}

func newRemotePool(current func() *identity) *remotePool {
	return &remotePool{current: current, conns: map[string]*remoteConn{}}
}

// get returns a connection to target and a release func. When the pool
// is full of busy connections, the connection is not pooled.
func (p *remotePool) get(target string) (*grpc.ClientConn, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()

	if rc, ok := p.conns[target]; ok {
		rc.refs++
		rc.lastUsed = time.Now()

		return rc.cc, p.releaser(rc), nil
	}

	cc, err := p.dial(target)
	if err != nil {
		return nil, nil, err
	}

	if len(p.conns) >= maxRemoteConns && !p.evictIdleLocked() {
		return cc, func() { cc.Close() }, nil
	}

	rc := &remoteConn{cc: cc, refs: 1, lastUsed: time.Now()}
	p.conns[target] = rc

	return cc, p.releaser(rc), nil
}

func (p *remotePool) releaser(rc *remoteConn) func() {
	var once sync.Once

	return func() {
		once.Do(func() {
			p.mu.Lock()
			rc.refs--
			p.mu.Unlock()
		})
	}
}

// evictIdleLocked closes the least recently used idle connection.
func (p *remotePool) evictIdleLocked() bool {
	var (
		oldest string
		found  *remoteConn
	)

	for t, rc := range p.conns {
		if rc.refs == 0 && (found == nil || rc.lastUsed.Before(found.lastUsed)) {
			oldest, found = t, rc
		}
	}

	if found == nil {
		return false
	}

	found.cc.Close()
	delete(p.conns, oldest)

	return true
}

func (p *remotePool) dial(target string) (*grpc.ClientConn, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, err
	}

	bc := backoff.DefaultConfig
	bc.MaxDelay = 15 * time.Second // as Talos's apid

	cc, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(credentials.NewTLS(clientTLS(p.current, host))),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bc, MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxResponseSize), grpc.MaxCallSendMsgSize(MaxApplyConfigSize)),
	)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "apid: node %q: %v", target, err)
	}

	return cc, nil
}

func (p *remotePool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()

	for t, rc := range p.conns {
		rc.cc.Close()
		delete(p.conns, t)
	}
}

// outgoing is the context of a forwarded call: the caller's roles (the
// target authorizes with them because we are os:impersonator) and who
// forwarded, which also makes the target serve it itself.
func outgoing(ctx context.Context, roles []role.Role, from string) context.Context {
	md := metadata.MD{mdRole: role.Strings(roles), mdProxyFrom: []string{from}}

	return metadata.NewOutgoingContext(ctx, md)
}

// forwardUnary sends a unary call to another node's apid.
func (p *remotePool) forwardUnary(ctx context.Context, target, method string, req any, roles []role.Role, from string) (any, error) {
	_, out, err := methodTypes(method)
	if err != nil {
		return nil, err
	}

	cc, release, err := p.get(target)
	if err != nil {
		return nil, err
	}
	defer release()

	resp := out.New().Interface()
	if err := cc.Invoke(outgoing(ctx, roles, from), method, req, resp); err != nil {
		return nil, remoteError(target, err)
	}

	return resp, nil
}

// forwardStream relays a streaming call to another node's apid. A
// server-streaming call sends its one request there and every response
// back; a client-streaming call (ImageService.Import) relays the caller's
// messages as they come, so an image archive is never held here whole.
func (p *remotePool) forwardStream(ctx context.Context, target, method string, ss grpc.ServerStream, clientStreams, serverStreams bool, roles []role.Role, from string) error {
	in, out, err := methodTypes(method)
	if err != nil {
		return err
	}

	var first proto.Message

	if !clientStreams {
		// Read before dialing: a bad request never costs a connection.
		first = in.New().Interface()
		if err := ss.RecvMsg(first); err != nil {
			return err
		}
	}

	cc, release, err := p.get(target)
	if err != nil {
		return err
	}
	defer release()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	cs, err := cc.NewStream(outgoing(ctx, roles, from), &grpc.StreamDesc{ClientStreams: clientStreams, ServerStreams: serverStreams}, method)
	if err != nil {
		return remoteError(target, err)
	}

	if clientStreams {
		go func() {
			// A failed relay cancels the call: the other node sees its
			// stream end without a clean close and reports nothing half-read.
			if err := relayRequests(ss, cs, in); err != nil {
				cancel()
			}
		}()
	} else {
		if err := cs.SendMsg(first); err != nil && !errors.Is(err, io.EOF) {
			return remoteError(target, err)
		}

		if err := cs.CloseSend(); err != nil {
			return remoteError(target, err)
		}
	}

	for {
		resp := out.New().Interface()

		if err := cs.RecvMsg(resp); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}

			return remoteError(target, err)
		}

		if err := ss.SendMsg(resp); err != nil {
			return err
		}

		if !serverStreams {
			return nil
		}
	}
}

// relayRequests copies the caller's messages to the other node until the
// caller closes its side, then closes ours.
func relayRequests(ss grpc.ServerStream, cs grpc.ClientStream, in protoreflect.MessageType) error {
	for {
		req := in.New().Interface()

		if err := ss.RecvMsg(req); err != nil {
			if errors.Is(err, io.EOF) {
				return cs.CloseSend()
			}

			return err
		}

		if err := cs.SendMsg(req); err != nil {
			// io.EOF: the other node ended the call; its status is what
			// the receive loop reports.
			return err
		}
	}
}

// remoteError keeps the other node's status. When the node could not be
// reached at all (the client transport failed), it says so and names it.
func remoteError(target string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return status.Errorf(codes.Unavailable, "apid: node %s: %v", target, err)
	}

	if st.Code() == codes.Unavailable && (strings.HasPrefix(st.Message(), "connection error") || strings.Contains(st.Message(), "transport:")) {
		return status.Errorf(codes.Unavailable, "apid: node %s is unreachable: %s", target, st.Message())
	}

	return st.Err()
}

// methodTypes finds a method's request and response types in the
// protobuf registry, so forwarding works for every registered method
// without a line per method.
func methodTypes(method string) (in, out protoreflect.MessageType, err error) {
	svc, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !ok {
		return nil, nil, status.Errorf(codes.Unimplemented, "apid: malformed method %q", method)
	}

	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, nil, status.Errorf(codes.Unimplemented, "apid: unknown service %q", svc)
	}

	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, nil, status.Errorf(codes.Unimplemented, "apid: %q is not a service", svc)
	}

	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, nil, status.Errorf(codes.Unimplemented, "apid: unknown method %q", method)
	}

	if in, err = protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName()); err != nil {
		return nil, nil, status.Errorf(codes.Internal, "apid: %s: %v", method, err)
	}

	if out, err = protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName()); err != nil {
		return nil, nil, status.Errorf(codes.Internal, "apid: %s: %v", method, err)
	}

	return in, out, nil
}

// splitNode parses node metadata: "host", "host:port", "[v6]:port" or a
// bare IPv6 address.
func splitNode(node string) (host, port string, err error) {
	node = strings.TrimSpace(node)
	if node == "" {
		return "", "", errors.New("empty node name")
	}

	if ip := net.ParseIP(node); ip != nil {
		return ip.String(), "", nil
	}

	if h, p, err := net.SplitHostPort(node); err == nil {
		host, port = h, p
	} else {
		host = node
	}

	if host == "" || strings.ContainsAny(host, "/ \t@") {
		return "", "", errors.New("not a host name or address")
	}

	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return "", "", fmt.Errorf("bad port %q", port)
		}
	}

	return host, port, nil
}

func joinHostPort(host, port string) string { return net.JoinHostPort(host, port) }
