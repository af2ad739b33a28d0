package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// joinResult is a learner slot the cluster holds for this member.
type joinResult struct {
	client         *clientv3.Client // to the members joined through
	memberID       uint64
	initialCluster string
}

// join waits until a member can be reached, then has the cluster add this
// node as a learner. It retries every RetryInterval until ctx ends, because
// the other control-plane nodes may boot later or not be bootstrapped yet.
func join(ctx context.Context, r *resolved, lg *zap.Logger) (*joinResult, error) {
	if r.JoinEndpoints == nil {
		return nil, errors.New("join endpoints are required")
	}

	tlsCfg, err := ClientTLSConfig(r.PKIDir)
	if err != nil {
		return nil, err
	}

	var (
		lastWaiting time.Time
		lastErr     string
	)

	for {
		endpoints := r.JoinEndpoints()

		res, err := tryJoin(ctx, r, tlsCfg, endpoints, lg)
		if err == nil {
			lg.Info("etcd cluster added this member as a learner",
				zap.String("member-id", fmt.Sprintf("%x", res.memberID)), zap.String("initial-cluster", res.initialCluster))

			return res, nil
		}

		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting to join the cluster: %w (last attempt: %w)", ctx.Err(), err)
		}

		nag := lastWaiting.IsZero() || time.Since(lastWaiting) >= r.WaitingInterval

		// Every failure is logged once, and again with each nag, so a
		// 30-minute wait does not write 600 identical lines.
		if nag || err.Error() != lastErr {
			lg.Warn("etcd cannot join the cluster yet", zap.Strings("endpoints", endpoints), zap.Error(err))
			lastErr = err.Error()
		}

		if nag {
			lastWaiting = time.Now()

			if r.Waiting != nil {
				r.Waiting(slices.Clone(endpoints))
			}
		}

		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting to join the cluster: %w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(r.RetryInterval):
		}
	}
}

// tryJoin is one attempt: list the members, drop a stale one that is us,
// and add us as a learner.
func tryJoin(ctx context.Context, r *resolved, tlsCfg *tls.Config, endpoints []string, lg *zap.Logger) (*joinResult, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("no member endpoints known yet")
	}

	timeout := attemptTimeout(r.RetryInterval)

	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         tlsCfg,
		DialTimeout: timeout,
		Logger:      zap.NewNop(), // it logs every failed dial; join logs the outcome
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	list, err := cli.MemberList(ctx)
	if err != nil {
		_ = cli.Close()

		return nil, fmt.Errorf("listing members: %w", err)
	}

	for _, m := range list.Members {
		if !isStale(m.Name, m.PeerURLs, r) {
			continue
		}

		lg.Info("removing stale etcd member before joining",
			zap.String("member-id", fmt.Sprintf("%x", m.ID)), zap.String("name", m.Name), zap.Strings("peer-urls", m.PeerURLs))

		if _, err := cli.MemberRemove(ctx, m.ID); err != nil && !errors.Is(err, rpctypes.ErrMemberNotFound) {
			_ = cli.Close()

			return nil, fmt.Errorf("removing stale member %x (%s): %w", m.ID, m.Name, err)
		}
	}

	add, err := cli.MemberAddAsLearner(ctx, r.AdvertisePeerURLs)
	if err != nil {
		_ = cli.Close()

		return nil, fmt.Errorf("adding this member as a learner: %w", err)
	}

	return &joinResult{
		client:         cli,
		memberID:       add.Member.ID,
		initialCluster: initialClusterFrom(r.Name, add),
	}, nil
}

// isStale reports a member that is this node from an earlier life: one with
// our name (the node was reset and its data wiped), or an unstarted one with
// our peer URLs (an earlier join added it, then failed to start).
func isStale(name string, peerURLs []string, r *resolved) bool {
	if name == r.Name {
		return true
	}

	if name != "" {
		return false
	}

	for _, u := range peerURLs {
		if slices.Contains(r.AdvertisePeerURLs, u) {
			return true
		}
	}

	return false
}

// initialClusterFrom builds --initial-cluster from MemberAdd's answer. etcd
// matches it with the cluster by peer URLs, so names only need to be unique:
// another member still unstarted has none and gets a placeholder.
func initialClusterFrom(name string, add *clientv3.MemberAddResponse) string {
	var parts []string

	for _, m := range add.Members {
		n := m.Name

		switch {
		case m.ID == add.Member.ID:
			n = name
		case n == "":
			n = fmt.Sprintf("unstarted-%x", m.ID)
		}

		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}

	return strings.Join(parts, ",")
}

// undo removes the learner this attempt added, so a later attempt neither
// trips over it nor leaves the cluster's single learner slot taken.
func (j *joinResult) undo(ctx context.Context, lg *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()

	if _, err := j.client.MemberRemove(ctx, j.memberID); err != nil && !errors.Is(err, rpctypes.ErrMemberNotFound) {
		lg.Warn("cannot remove the learner of a failed join", zap.String("member-id", fmt.Sprintf("%x", j.memberID)), zap.Error(err))
	}
}
