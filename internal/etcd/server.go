package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// Errors Start and a running Server report.
var (
	// ErrDataDirNotEmpty: Bootstrap and Join need an empty data dir, so an
	// existing member is never overwritten.
	ErrDataDirNotEmpty = errors.New("etcd data dir is not empty")
	// ErrNoMember: Resume found no member in the data dir.
	ErrNoMember = errors.New("etcd data dir holds no member")
	// ErrRemoved: the member was removed from the cluster while it ran. Its
	// data is useless now: wipe it and Join again.
	ErrRemoved = errors.New("etcd member was removed from the cluster")
	// ErrStopped: etcd stopped on its own; its log says why.
	ErrStopped = errors.New("etcd stopped unexpectedly")
)

// Server is a running member.
type Server struct {
	opts *resolved
	log  *zap.Logger
	etcd *embed.Etcd

	client *clientv3.Client

	// ctx ends when Close is called; background loops and their requests
	// hang off it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	done chan struct{} // closed once etcd is down
	err  error         // why it went down; set before done is closed

	voter chan struct{} // closed once this member votes
}

// Start brings up this node's member and returns once it serves. Join first
// waits for a cluster to join (until ctx ends). Bootstrap and Join leave the
// data dir empty when they fail, so they can simply be retried.
func Start(ctx context.Context, opts Options, mode Mode) (*Server, error) {
	s, err := start(ctx, opts, mode)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", mode, err)
	}

	return s, nil
}

func start(ctx context.Context, opts Options, mode Mode) (*Server, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}

	cfg, lg, err := r.embedConfig()
	if err != nil {
		return nil, err
	}

	switch mode {
	case Bootstrap, Join:
		empty, err := dirEmpty(r.DataDir)
		if err != nil {
			return nil, err
		}

		if !empty {
			return nil, fmt.Errorf("%w: %s (a member lives there: resume it, or wipe it to start over)", ErrDataDirNotEmpty, r.DataDir)
		}
	case Resume:
		if !IsInitialized(r.DataDir) {
			return nil, fmt.Errorf("%w: %s", ErrNoMember, r.DataDir)
		}
	default:
		return nil, fmt.Errorf("unknown mode %v", mode)
	}

	if err := WriteCerts(r.Options); err != nil {
		return nil, err
	}

	// etcd wants its data dir private and warns otherwise.
	if err := os.MkdirAll(r.DataDir, 0o700); err != nil {
		return nil, err
	}

	cfg.InitialCluster = r.initialCluster()
	cfg.ClusterState = embed.ClusterStateFlagExisting

	// A join whose start could not ask the members for their versions
	// (etcd's "incompatible with current running cluster": a loaded
	// machine, or a cluster so new that its leader has not yet decided the
	// cluster version, which etcd does on a ticker of several seconds) is
	// undone and tried again, paced by RetryInterval, for up to
	// joinRetryWindow: nothing of a failed attempt is left.
	giveUp := time.Now().Add(joinRetryWindow)

	for attempt := 1; ; attempt++ {
		s, err := startOnce(ctx, r, cfg, mode, lg)
		if err == nil || mode != Join || !transientJoinError(err) || time.Now().After(giveUp) {
			return s, err
		}

		lg.Warn("join failed, trying again", zap.Int("attempt", attempt), zap.Error(err))

		if attempt > 1 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
			case <-time.After(r.RetryInterval):
			}
		}

		if err := os.MkdirAll(r.DataDir, 0o700); err != nil {
			return nil, err
		}
	}
}

// joinRetryWindow bounds the retries of a join that failed transiently:
// a real incompatibility (another etcd version) must not retry forever.
const joinRetryWindow = time.Minute

// transientJoinError is etcd's refusal to start a joining member when it
// could not fetch the cluster's versions or membership from the peers.
func transientJoinError(err error) bool {
	msg := err.Error()

	return strings.Contains(msg, "incompatible with current running cluster") || strings.Contains(msg, "cannot fetch cluster info from peer urls")
}

// startOnce joins (in Join mode) and serves once; a failed start wipes what
// it wrote and undoes the join.
func startOnce(ctx context.Context, r *resolved, cfg *embed.Config, mode Mode, lg *zap.Logger) (*Server, error) {
	var (
		joined *joinResult
		err    error
	)

	switch mode {
	case Bootstrap:
		cfg.ClusterState = embed.ClusterStateFlagNew
	case Join:
		if joined, err = join(ctx, r, lg); err != nil {
			return nil, err
		}

		defer joined.client.Close()

		cfg.InitialCluster = joined.initialCluster
	}

	s, err := serve(ctx, r, cfg, lg)
	if err != nil {
		if mode != Resume {
			if werr := wipeDir(r.DataDir); werr != nil {
				lg.Warn("cannot clean up after failed start", zap.Error(werr))
			}
		}

		if joined != nil {
			joined.undo(ctx, lg)
		}

		return nil, err
	}

	return s, nil
}

// serve starts etcd, waits until it serves clients, and starts the loops
// that promote a learner and notice etcd stopping.
func serve(ctx context.Context, r *resolved, cfg *embed.Config, lg *zap.Logger) (*Server, error) {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}

	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()

		return nil, fmt.Errorf("%w before it was ready: %w", ErrStopped, err)
	case <-e.Server.StopNotify():
		e.Close()

		return nil, fmt.Errorf("%w before it was ready (see its log)", ErrStopped)
	case <-ctx.Done():
		e.Close()

		return nil, ctx.Err()
	}

	sctx, cancel := context.WithCancel(context.Background())

	client := v3client.New(e.Server)
	client.Maintenance = inProcessMaintenance{Maintenance: client.Maintenance, srv: e.Server}

	s := &Server{
		opts:   r,
		log:    lg,
		etcd:   e,
		client: client,
		ctx:    sctx,
		cancel: cancel,
		done:   make(chan struct{}),
		voter:  make(chan struct{}),
	}

	s.wg.Add(1)

	go s.promote()
	go s.watch()

	return s, nil
}

// inProcessMaintenance fixes Defragment on the in-process client: etcd
// 3.7.3's v3client builds its maintenance server without the health
// notifier the Defragment RPC calls, so it panics. The server's own
// Defragment is what that RPC runs.
type inProcessMaintenance struct {
	clientv3.Maintenance

	srv *etcdserver.EtcdServer
}

func (m inProcessMaintenance) Defragment(ctx context.Context, _ string) (*clientv3.DefragmentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	if err := m.srv.Defragment(); err != nil {
		return nil, err
	}

	return &clientv3.DefragmentResponse{}, nil
}

// watch tears etcd down when Close is called or etcd stops by itself, and
// records why.
func (s *Server) watch() {
	var err error

	select {
	case <-s.ctx.Done():
	case e := <-s.etcd.Err():
		err = fmt.Errorf("%w: %w", ErrStopped, e)
	case <-s.etcd.Server.StopNotify():
		err = ErrStopped
		if !s.etcd.Server.IsMemberExist(s.etcd.Server.MemberID()) {
			err = ErrRemoved
		}
	}

	if err != nil {
		s.log.Warn("etcd stopped", zap.Error(err))
	}

	s.cancel()
	s.wg.Wait()
	_ = s.client.Close()
	s.etcd.Close()

	s.err = err
	close(s.done)
}

// promote makes a learner a voting member as soon as the leader finds it
// caught up. It asks through the local server, which forwards the request
// to the leader over the peer connection.
func (s *Server) promote() {
	defer s.wg.Done()

	id := s.MemberID()

	for {
		learner, member := s.localMember()
		if !member {
			return // removed while a learner: the server stops by itself
		}

		if !learner {
			close(s.voter)

			return
		}

		wait := s.opts.RetryInterval

		ctx, cancel := context.WithTimeout(s.ctx, attemptTimeout(s.opts.RetryInterval))
		_, err := s.client.MemberPromote(ctx, id)

		cancel()

		switch {
		case err == nil, errors.Is(err, rpctypes.ErrMemberNotLearner):
			// The promotion is committed; it shows locally once applied.
			wait = min(wait, 10*time.Millisecond)
		case errors.Is(err, rpctypes.ErrMemberLearnerNotReady):
			s.log.Info("etcd learner is catching up before promotion")
		default:
			s.log.Warn("etcd learner promotion failed, retrying", zap.Error(err))
		}

		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// localMember says whether this member is a learner, and whether the
// applied membership still has it at all. etcd's own IsLearner panics
// once the member's removal is applied ("failed to find local ID in
// cluster members"), which leaves the server running for another second:
// here that panic would be PID 1's.
func (s *Server) localMember() (learner, member bool) {
	m := s.etcd.Server.Cluster().Member(s.etcd.Server.MemberID())
	if m == nil {
		return false, false
	}

	return m.IsLearner, true
}

// attemptTimeout bounds one remote request of a retry loop: long enough for
// a busy cluster, short enough that unreachable endpoints are retried.
func attemptTimeout(retry time.Duration) time.Duration {
	return min(max(2*retry, time.Second), 10*time.Second)
}

// Client is an in-process client of this member: no socket and no TLS.
// It stays valid until the server stops; do not close it.
func (s *Server) Client() *clientv3.Client { return s.client }

// MemberID is this member's ID in the cluster.
func (s *Server) MemberID() uint64 { return uint64(s.etcd.Server.MemberID()) }

// Name is this member's name.
func (s *Server) Name() string { return s.opts.Name }

// Done is closed once the member has stopped, after Close or on its own.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err says why the member stopped: nil after Close, ErrRemoved or an
// ErrStopped error otherwise. It is nil while the member runs.
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close stops the member (handing leadership over first, if it leads) and
// waits until it is down. It is safe to call more than once.
func (s *Server) Close() {
	s.cancel()
	<-s.done
}

// WaitVoter returns once this member is a voting member: at once for
// Bootstrap, after the promotion for Join.
func (s *Server) WaitVoter(ctx context.Context) error {
	select {
	case <-s.voter:
		return nil
	default:
	}

	select {
	case <-s.voter:
		return nil
	case <-s.done:
		if s.err != nil {
			return fmt.Errorf("etcd stopped before this member could vote: %w", s.err)
		}

		return errors.New("etcd was closed before this member could vote")
	case <-ctx.Done():
		return fmt.Errorf("waiting for etcd promotion: %w", ctx.Err())
	}
}
