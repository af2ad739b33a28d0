package server

import (
	"context"
	"time"

	"github.com/beevik/ntp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	timeapi "github.com/talosbox/talosbox/internal/api/time"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/timed"
)

// timeServer is TimeService: `talosctl time`.
type timeServer struct {
	timeapi.UnimplementedTimeServiceServer

	m *machineServer
	// query asks one server; ntp.QueryWithOptions but for tests.
	query func(server string) (*ntp.Response, error)
}

// Time asks the first time server the node uses.
func (s *timeServer) Time(ctx context.Context, _ *emptypb.Empty) (*timeapi.TimeResponse, error) {
	st, err := bus.GetAs[*bus.Typed[network.TimeServerStatusSpec]](ctx, s.m.node.Store(), bus.Pointer{Namespace: network.Namespace, Type: network.TimeServerStatusType, ID: network.TimeServerID})
	if err != nil || len(st.TypedSpec().NTPServers) == 0 {
		return nil, status.Error(codes.FailedPrecondition, "the node has no time server configured (machine.time.servers); name one with --check")
	}

	return s.check(st.TypedSpec().NTPServers[0])
}

// TimeCheck asks the server in the request.
func (s *timeServer) TimeCheck(_ context.Context, req *timeapi.TimeRequest) (*timeapi.TimeResponse, error) {
	if req.GetServer() == "" {
		return nil, status.Error(codes.InvalidArgument, "no time server given")
	}

	return s.check(req.GetServer())
}

// check reports the node's clock and the server's at one moment: the
// server's time is the node's plus the offset NTP measured (with the
// round trip taken out), so their difference is the node's error.
func (s *timeServer) check(server string) (*timeapi.TimeResponse, error) {
	query := s.query
	if query == nil {
		query = func(server string) (*ntp.Response, error) {
			return ntp.QueryWithOptions(server, ntp.QueryOptions{Timeout: timed.QueryTimeout})
		}
	}

	resp, err := query(server)
	if err == nil {
		err = resp.Validate()
	}

	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "time server %s: %v", server, err)
	}

	now := time.Now()

	return &timeapi.TimeResponse{Messages: []*timeapi.Time{{
		Server:     server,
		Localtime:  timestamppb.New(now),
		Remotetime: timestamppb.New(now.Add(resp.ClockOffset)),
	}}}, nil
}
