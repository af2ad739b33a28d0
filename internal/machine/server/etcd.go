package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/controlplane"
	"github.com/talosbox/talosbox/internal/etcd"
)

// maxRecoverSize caps an uploaded snapshot: etcd's own quota limit.
const maxRecoverSize = 8 << 30

// etcdError maps the control plane's errors onto gRPC codes.
func etcdError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, controlplane.ErrNotControlPlane), errors.Is(err, controlplane.ErrNotRunning),
		errors.Is(err, controlplane.ErrAlreadyBootstrapped), errors.Is(err, etcd.ErrLastMember):
		return status.Errorf(codes.FailedPrecondition, "%s: %v", op, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return status.Errorf(codes.DeadlineExceeded, "%s: %v", op, err)
	default:
		return status.Errorf(codes.Internal, "%s: %v", op, err)
	}
}

// member is the running etcd member, or the call's error.
func (m *machineServer) member(op string) (*etcd.Server, error) {
	if m.plane == nil {
		return nil, etcdError(op, controlplane.ErrNotControlPlane)
	}

	srv, err := m.plane.Server()

	return srv, etcdError(op, err)
}

// Bootstrap starts a one-member etcd cluster on this node.
func (m *machineServer) Bootstrap(ctx context.Context, req *machine.BootstrapRequest) (*machine.BootstrapResponse, error) {
	if m.plane == nil {
		return nil, status.Error(codes.FailedPrecondition, "bootstrap can only be performed on a control plane node")
	}

	if err := m.plane.Bootstrap(ctx, req.GetRecoverEtcd(), req.GetRecoverSkipHashCheck()); err != nil {
		if errors.Is(err, controlplane.ErrAlreadyBootstrapped) {
			return nil, status.Errorf(codes.AlreadyExists, "bootstrap: %v", err)
		}

		return nil, status.Errorf(codes.FailedPrecondition, "bootstrap: %v", err)
	}

	return &machine.BootstrapResponse{Messages: []*machine.Bootstrap{{}}}, nil
}

// EtcdRecover receives a snapshot for a later bootstrap --recover-from.
func (m *machineServer) EtcdRecover(srv grpc.ClientStreamingServer[common.Data, machine.EtcdRecoverResponse]) error {
	if m.plane == nil {
		return etcdError("etcd recover", controlplane.ErrNotControlPlane)
	}

	pr, pw := io.Pipe()

	go func() {
		var n int64

		for {
			msg, err := srv.Recv()
			if errors.Is(err, io.EOF) {
				pw.Close()
				return
			}

			if err != nil {
				pw.CloseWithError(err)
				return
			}

			if n += int64(len(msg.GetBytes())); n > maxRecoverSize {
				pw.CloseWithError(fmt.Errorf("snapshot larger than %d bytes", maxRecoverSize))
				return
			}

			if _, err := pw.Write(msg.GetBytes()); err != nil {
				return
			}
		}
	}()

	err := m.plane.Recover(pr)
	pr.Close()

	if err != nil {
		return etcdError("etcd recover", err)
	}

	return srv.SendAndClose(&machine.EtcdRecoverResponse{Messages: []*machine.EtcdRecover{{}}})
}

func (m *machineServer) EtcdMemberList(ctx context.Context, _ *machine.EtcdMemberListRequest) (*machine.EtcdMemberListResponse, error) {
	srv, err := m.member("etcd members")
	if err != nil {
		return nil, err
	}

	members, err := srv.Members(ctx)
	if err != nil {
		return nil, etcdError("etcd members", err)
	}

	out := &machine.EtcdMembers{}
	for _, mb := range members {
		out.Members = append(out.Members, &machine.EtcdMember{
			Id: mb.ID, Hostname: mb.Name, PeerUrls: mb.PeerURLs, ClientUrls: mb.ClientURLs, IsLearner: mb.IsLearner,
		})
	}

	return &machine.EtcdMemberListResponse{Messages: []*machine.EtcdMembers{out}}, nil
}

func (m *machineServer) EtcdRemoveMemberByID(ctx context.Context, req *machine.EtcdRemoveMemberByIDRequest) (*machine.EtcdRemoveMemberByIDResponse, error) {
	srv, err := m.member("etcd remove-member")
	if err != nil {
		return nil, err
	}

	if req.GetMemberId() == srv.MemberID() {
		return nil, status.Error(codes.InvalidArgument, "etcd remove-member: that is this node's own member: use 'talosctl etcd leave' against it instead")
	}

	if err := srv.RemoveMember(ctx, req.GetMemberId()); err != nil {
		return nil, etcdError("etcd remove-member "+strconv.FormatUint(req.GetMemberId(), 16), err)
	}

	return &machine.EtcdRemoveMemberByIDResponse{Messages: []*machine.EtcdRemoveMemberByID{{}}}, nil
}

func (m *machineServer) EtcdLeaveCluster(ctx context.Context, _ *machine.EtcdLeaveClusterRequest) (*machine.EtcdLeaveClusterResponse, error) {
	if m.plane == nil {
		return nil, etcdError("etcd leave", controlplane.ErrNotControlPlane)
	}

	if _, err := m.member("etcd leave"); err != nil {
		return nil, err
	}

	if err := m.plane.Leave(ctx, m.log); err != nil {
		return nil, etcdError("etcd leave", err)
	}

	return &machine.EtcdLeaveClusterResponse{Messages: []*machine.EtcdLeaveCluster{{}}}, nil
}

func (m *machineServer) EtcdForfeitLeadership(ctx context.Context, _ *machine.EtcdForfeitLeadershipRequest) (*machine.EtcdForfeitLeadershipResponse, error) {
	srv, err := m.member("etcd forfeit-leadership")
	if err != nil {
		return nil, err
	}

	to, err := srv.ForfeitLeadership(ctx)
	if err != nil {
		return nil, etcdError("etcd forfeit-leadership", err)
	}

	return &machine.EtcdForfeitLeadershipResponse{Messages: []*machine.EtcdForfeitLeadership{{Member: to}}}, nil
}

// EtcdSnapshot streams a consistent snapshot of the member's database.
func (m *machineServer) EtcdSnapshot(_ *machine.EtcdSnapshotRequest, stream grpc.ServerStreamingServer[common.Data]) error {
	srv, err := m.member("etcd snapshot")
	if err != nil {
		return err
	}

	if err := srv.Snapshot(stream.Context(), dataWriter{srv: stream}); err != nil {
		return etcdError("etcd snapshot", err)
	}

	return nil
}

func (m *machineServer) EtcdStatus(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdStatusResponse, error) {
	srv, err := m.member("etcd status")
	if err != nil {
		return nil, err
	}

	st, err := srv.Status(ctx)
	if err != nil {
		return nil, etcdError("etcd status", err)
	}

	return &machine.EtcdStatusResponse{Messages: []*machine.EtcdStatus{{MemberStatus: &machine.EtcdMemberStatus{
		MemberId:         st.MemberID,
		ProtocolVersion:  st.Version,
		DbSize:           st.DBSize,
		DbSizeInUse:      st.DBSizeInUse,
		Leader:           st.Leader,
		RaftIndex:        st.RaftIndex,
		RaftTerm:         st.RaftTerm,
		RaftAppliedIndex: st.RaftAppliedIndex,
		Errors:           st.Errors,
		IsLearner:        st.IsLearner,
	}}}}, nil
}

func (m *machineServer) EtcdDefragment(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdDefragmentResponse, error) {
	srv, err := m.member("etcd defrag")
	if err != nil {
		return nil, err
	}

	if err := srv.Defrag(ctx); err != nil {
		return nil, etcdError("etcd defrag", err)
	}

	return &machine.EtcdDefragmentResponse{Messages: []*machine.EtcdDefragment{{}}}, nil
}

func (m *machineServer) EtcdAlarmList(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdAlarmListResponse, error) {
	srv, err := m.member("etcd alarm list")
	if err != nil {
		return nil, err
	}

	alarms, err := srv.AlarmList(ctx)
	if err != nil {
		return nil, etcdError("etcd alarm list", err)
	}

	return &machine.EtcdAlarmListResponse{Messages: []*machine.EtcdAlarm{{MemberAlarms: memberAlarms(alarms)}}}, nil
}

func (m *machineServer) EtcdAlarmDisarm(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdAlarmDisarmResponse, error) {
	srv, err := m.member("etcd alarm disarm")
	if err != nil {
		return nil, err
	}

	alarms, err := srv.AlarmDisarm(ctx)
	if err != nil {
		return nil, etcdError("etcd alarm disarm", err)
	}

	return &machine.EtcdAlarmDisarmResponse{Messages: []*machine.EtcdAlarmDisarm{{MemberAlarms: memberAlarms(alarms)}}}, nil
}

func memberAlarms(alarms []etcd.Alarm) []*machine.EtcdMemberAlarm {
	out := make([]*machine.EtcdMemberAlarm, 0, len(alarms))
	for _, a := range alarms {
		out = append(out, &machine.EtcdMemberAlarm{MemberId: a.MemberID, Alarm: machine.EtcdMemberAlarm_AlarmType(machine.EtcdMemberAlarm_AlarmType_value[a.Type])})
	}

	return out
}
