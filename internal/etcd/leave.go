package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.uber.org/zap"
)

// ErrLastMember: leaving would take the cluster's only vote with it.
var ErrLastMember = errors.New("etcd cluster has only one member")

// Leave removes this member from the cluster (`talosctl reset --graceful`,
// `talosctl etcd leave`), stops it and wipes its data dir, so the node can
// later Join afresh. It hands leadership over first, and retries while the
// cluster refuses because it is unhealthy (a removal must not cost the
// remaining members their quorum) until ctx ends. The only voting member
// cannot leave: that fails with ErrLastMember.
func (s *Server) Leave(ctx context.Context) error {
	self := s.MemberID()

	members, err := s.Members(ctx)
	if err != nil {
		return fmt.Errorf("etcd leave: %w", err)
	}

	voters, selfVotes := 0, false

	for _, m := range members {
		if !m.IsLearner {
			voters++
			selfVotes = selfVotes || m.ID == self
		}
	}

	if selfVotes && voters == 1 {
		return fmt.Errorf("etcd leave: %w, use --graceful=false to reset it", ErrLastMember)
	}

	// A leader removing itself leaves the others without one until they
	// time out and elect; handing over first avoids that pause.
	if _, err := s.ForfeitLeadership(ctx); err != nil {
		s.log.Warn("etcd leave: cannot hand leadership over first", zap.Error(err))
	}

	if err := s.removeSelf(ctx); err != nil {
		return err
	}

	s.Close()

	if err := wipeDir(s.opts.DataDir); err != nil {
		return fmt.Errorf("etcd leave: %w", err)
	}

	return nil
}

func (s *Server) removeSelf(ctx context.Context) error {
	self := s.MemberID()

	for {
		rctx, cancel := context.WithTimeout(ctx, attemptTimeout(s.opts.RetryInterval))
		_, err := s.client.MemberRemove(rctx, self)

		cancel()

		switch {
		case err == nil, errors.Is(err, rpctypes.ErrMemberNotFound):
			return nil
		case errors.Is(err, rpctypes.ErrStopped) && !s.etcd.Server.IsMemberExist(types.ID(self)):
			// An earlier attempt timed out here but was applied: the member
			// saw its own removal and stopped.
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("etcd leave: %w (last attempt: %w)", ctx.Err(), err)
		case !transient(err):
			return fmt.Errorf("etcd leave: %w", err)
		}

		s.log.Warn("etcd leave: the cluster refuses the removal for now, retrying", zap.Error(err))

		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd leave: %w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(s.opts.RetryInterval):
		}
	}
}

// transient reports errors a membership change may succeed after: the
// cluster is unhealthy, electing, or slow.
func transient(err error) bool {
	for _, t := range []error{
		rpctypes.ErrUnhealthy, rpctypes.ErrMemberNotEnoughStarted, rpctypes.ErrTimeout,
		rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost,
		rpctypes.ErrLeaderChanged, rpctypes.ErrNoLeader, rpctypes.ErrNotLeader,
		context.DeadlineExceeded,
	} {
		if errors.Is(err, t) {
			return true
		}
	}

	return false
}
