package apid

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
)

// Limits on what one client can make apid hold. apid runs inside PID 1,
// so a client must not be able to grow it without bound.
const (
	// MaxRequestSize caps every request but ApplyConfiguration's.
	MaxRequestSize = 4 << 20
	// MaxApplyConfigSize caps ApplyConfiguration (a config with inline
	// manifests can be large); it is also the transport's frame limit.
	MaxApplyConfigSize = 16 << 20
	// MaxResponseSize caps one response message (Resource Get of a big
	// config; streams send small chunks).
	MaxResponseSize = 16 << 20
	// MaxStreamsPerConn caps concurrent calls on one connection.
	MaxStreamsPerConn = 128
	// maxHeaderListSize caps request metadata.
	maxHeaderListSize = 64 << 10
)

// newGRPCServer builds the server of one generation: its TLS, limits and
// interceptors are those of id's mode.
func (s *Server) newGRPCServer(id *identity) *grpc.Server {
	g := &generation{s: s, id: id}

	gs := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(serverTLS(id, s.identity))),
		// The transport admits the largest request any method accepts;
		// checkSize holds the others to MaxRequestSize.
		grpc.MaxRecvMsgSize(MaxApplyConfigSize),
		grpc.MaxSendMsgSize(MaxResponseSize),
		grpc.MaxConcurrentStreams(MaxStreamsPerConn),
		grpc.MaxHeaderListSize(maxHeaderListSize),
		grpc.ConnectionTimeout(10*time.Second), // TLS handshake included
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: 30 * time.Minute,
			Time:              2 * time.Minute,
			Timeout:           20 * time.Second,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             10 * time.Second,
			PermitWithoutStream: true,
		}),
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
	)

	resource.RegisterResourceServiceServer(gs, &resourceServer{s: s})

	if s.opts.Register != nil {
		s.opts.Register(gs)
	}

	return gs
}

// checkSize holds requests to MaxRequestSize, but ApplyConfiguration's.
// The transport already refused anything above MaxApplyConfigSize.
func checkSize(method string, req any) error {
	if method == machine.MachineService_ApplyConfiguration_FullMethodName {
		return nil
	}

	if m, ok := req.(proto.Message); ok {
		if n := proto.Size(m); n > MaxRequestSize {
			return status.Errorf(codes.ResourceExhausted, "apid: request of %d bytes is larger than the %d allowed for %s", n, MaxRequestSize, method)
		}
	}

	return nil
}
