package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Member is one member of the cluster, as `talosctl etcd members` shows it.
type Member struct {
	ID         uint64
	Name       string // empty until the member has started
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// Status is this member's view, as `talosctl etcd status` shows it.
type Status struct {
	MemberID         uint64
	Leader           uint64 // 0 while there is none
	Version          string
	RaftIndex        uint64
	RaftTerm         uint64
	RaftAppliedIndex uint64
	DBSize           int64 // bytes on disk
	DBSizeInUse      int64 // bytes holding live data; the rest defrag frees
	IsLearner        bool
	Errors           []string
}

// Alarm is a raised cluster alarm (NOSPACE, CORRUPT).
type Alarm struct {
	MemberID uint64
	Type     string
}

// healthKey is read to prove the cluster answers linearizable reads; Talos
// reads the same key.
const healthKey = "health"

// Members lists the cluster's members as this member knows them.
func (s *Server) Members(ctx context.Context) ([]Member, error) {
	resp, err := s.client.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd members: %w", err)
	}

	out := make([]Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		out = append(out, memberFrom(m))
	}

	return out, nil
}

func memberFrom(m *etcdserverpb.Member) Member {
	return Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}
}

// RemoveMember removes another member by ID (`talosctl etcd remove-member`),
// e.g. one whose node is gone for good. To remove this one, use Leave.
func (s *Server) RemoveMember(ctx context.Context, id uint64) error {
	if id == s.MemberID() {
		return errors.New("etcd remove-member: that is this member: use leave")
	}

	if _, err := s.client.MemberRemove(ctx, id); err != nil {
		return fmt.Errorf("etcd remove-member %x: %w", id, err)
	}

	return nil
}

// ForfeitLeadership hands leadership to another voting member if this
// member leads, before a reboot or upgrade, and returns the new leader's
// name; "" when this member was not the leader. Voters are tried in turn:
// a transfer to a member that is down or behind times out.
func (s *Server) ForfeitLeadership(ctx context.Context) (string, error) {
	self := s.MemberID()

	if uint64(s.etcd.Server.Leader()) != self {
		return "", nil
	}

	members, err := s.Members(ctx)
	if err != nil {
		return "", fmt.Errorf("etcd forfeit-leadership: %w", err)
	}

	var errs []error

	for _, m := range members {
		if m.ID == self || m.IsLearner || m.Name == "" {
			continue
		}

		tctx, cancel := context.WithTimeout(ctx, max(5*s.electionTimeout(), 2*time.Second))
		_, err := s.client.MoveLeader(tctx, m.ID)

		cancel()

		if err == nil {
			s.log.Info("etcd leadership moved", zap.String("to", m.Name))

			return m.Name, nil
		}

		errs = append(errs, fmt.Errorf("to %s: %w", m.Name, err))

		if ctx.Err() != nil {
			break
		}
	}

	if len(errs) == 0 {
		return "", errors.New("etcd forfeit-leadership: no other voting member")
	}

	return "", fmt.Errorf("etcd forfeit-leadership: %w", errors.Join(errs...))
}

func (s *Server) electionTimeout() time.Duration {
	return time.Duration(s.etcd.Config().ElectionMs) * time.Millisecond
}

// Status reports this member's raft and storage state.
func (s *Server) Status(ctx context.Context) (Status, error) {
	// etcd's Status handler asks IsLearner too, which panics in this
	// goroutine once the member's removal is applied.
	if _, member := s.localMember(); !member {
		return Status{}, errors.New("etcd status: this member was removed from the cluster")
	}

	// The in-process client ignores the endpoint: it always asks this member.
	resp, err := s.client.Status(ctx, "")
	if err != nil {
		return Status{}, fmt.Errorf("etcd status: %w", err)
	}

	return Status{
		MemberID:         resp.Header.GetMemberId(),
		Leader:           resp.Leader,
		Version:          resp.Version,
		RaftIndex:        resp.RaftIndex,
		RaftTerm:         resp.RaftTerm,
		RaftAppliedIndex: resp.RaftAppliedIndex,
		DBSize:           resp.DbSize,
		DBSizeInUse:      resp.DbSizeInUse,
		IsLearner:        resp.IsLearner,
		Errors:           resp.Errors,
	}, nil
}

// Defrag compacts this member's database file. It blocks the member's
// reads and writes while it runs: defragment one member at a time.
func (s *Server) Defrag(ctx context.Context) error {
	if _, err := s.client.Defragment(ctx, ""); err != nil {
		return fmt.Errorf("etcd defrag: %w", err)
	}

	return nil
}

// AlarmList returns the cluster's raised alarms.
func (s *Server) AlarmList(ctx context.Context) ([]Alarm, error) {
	resp, err := s.client.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd alarm list: %w", err)
	}

	return alarmsFrom(resp), nil
}

// AlarmDisarm clears every raised alarm, e.g. NOSPACE after compaction and
// defrag freed space, and returns those it cleared.
func (s *Server) AlarmDisarm(ctx context.Context) ([]Alarm, error) {
	// An empty AlarmMember asks the client to disarm each raised alarm.
	resp, err := s.client.AlarmDisarm(ctx, &clientv3.AlarmMember{})
	if err != nil {
		return nil, fmt.Errorf("etcd alarm disarm: %w", err)
	}

	return alarmsFrom(resp), nil
}

func alarmsFrom(resp *clientv3.AlarmResponse) []Alarm {
	out := make([]Alarm, 0, len(resp.Alarms))
	for _, a := range resp.Alarms {
		out = append(out, Alarm{MemberID: a.MemberID, Type: a.Alarm.String()})
	}

	return out
}

// Healthy reports whether this member is a voter and the cluster answers a
// linearizable read through it, which needs a leader and a quorum.
func (s *Server) Healthy(ctx context.Context) error {
	learner, member := s.localMember()

	switch {
	case !member:
		return errors.New("etcd is not healthy: this member was removed from the cluster")
	case learner:
		return errors.New("etcd is not healthy: this member is still a learner")
	}

	if _, err := s.client.Get(ctx, healthKey); err != nil {
		return fmt.Errorf("etcd is not healthy: %w", err)
	}

	return nil
}

// Snapshot streams a consistent snapshot of the database to w. It ends with
// a SHA-256 of the data, which Restore checks.
func (s *Server) Snapshot(ctx context.Context, w io.Writer) error {
	rc, err := s.client.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("etcd snapshot: %w", err)
	}

	defer rc.Close() //nolint:errcheck // read side; the copy reports failures

	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("etcd snapshot: %w", err)
	}

	return nil
}
