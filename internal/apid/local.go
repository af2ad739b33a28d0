package apid

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"

	"github.com/talosbox/talosbox/internal/api/resource"
)

// listenLocal makes the local socket: a stale one from a previous run is
// replaced, and the socket is root's alone.
func listenLocal(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("apid: local socket: %w", err)
	}

	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("apid: local socket: %w", err)
	}

	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("apid: local socket: %w", err)
	}

	if err := os.Chmod(path, 0o600); err != nil {
		lis.Close() //nolint:errcheck

		return nil, fmt.Errorf("apid: local socket: %w", err)
	}

	return lis, nil
}

// ServeLocal serves lis (a unix socket only the node's processes reach)
// until ctx ends: every caller is os:reader, and calls are never
// forwarded to other nodes. The same interceptors as the TLS server's
// authorize each call, so a reader's limits hold here too.
func (s *Server) ServeLocal(ctx context.Context, lis net.Listener) error {
	g := &generation{s: s, id: &identity{local: true}}

	gs := grpc.NewServer(
		grpc.MaxRecvMsgSize(MaxRequestSize),
		grpc.MaxSendMsgSize(MaxResponseSize),
		grpc.MaxConcurrentStreams(MaxStreamsPerConn),
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
	)

	resource.RegisterResourceServiceServer(gs, &resourceServer{s: s})

	if s.opts.Register != nil {
		s.opts.Register(gs)
	}

	go func() {
		<-ctx.Done()
		gs.Stop()
	}()

	err := gs.Serve(lis)
	if ctx.Err() != nil {
		return nil
	}

	return err
}
