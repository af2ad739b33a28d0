package vip

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// term is one tenure as the owner: the lease, the session over it and the
// election won.
type term struct {
	cli      *clientv3.Client
	lease    clientv3.LeaseID
	ttl      time.Duration
	session  *concurrency.Session
	election *concurrency.Election
	gone     <-chan struct{}
	// lastRenewal is when the lease was last renewed (unix ns); kaDone
	// closes when the keepalive stream ends.
	lastRenewal atomic.Int64
	kaDone      chan struct{}
	cancel      context.CancelFunc
}

// drain records keepalive answers; it also keeps the stream read while
// the campaign blocks, which may be for as long as another node owns the IP.
func (t *term) drain(renewed <-chan *clientv3.LeaseKeepAliveResponse) {
	defer close(t.kaDone)

	for resp := range renewed {
		if resp != nil {
			t.lastRenewal.Store(time.Now().UnixNano())
		}
	}
}

// campaign waits for etcd, takes a lease and campaigns until elected.
func (o *Operator) campaign(ctx context.Context, log *slog.Logger) (*term, error) {
	cli, gone, err := o.opts.Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}

	ttlSeconds := int64(o.opts.TTL / time.Second)

	grant, err := cli.Grant(ctx, ttlSeconds)
	if err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}

	// The term's own keepalive stream, beside the session's, tells when
	// the lease was last known alive.
	kaCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))

	renewed, err := cli.KeepAlive(kaCtx, grant.ID)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("lease keepalive: %w", err)
	}

	session, err := concurrency.NewSession(cli, concurrency.WithLease(grant.ID), concurrency.WithContext(kaCtx))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("session: %w", err)
	}

	t := &term{cli: cli, lease: grant.ID, ttl: o.opts.TTL, session: session, gone: gone, kaDone: make(chan struct{}), cancel: cancel}
	t.lastRenewal.Store(time.Now().UnixNano())

	go t.drain(renewed)

	t.election = concurrency.NewElection(session, o.Key())

	log.Debug("campaigning for the shared IP")

	campaignCtx, stop := context.WithCancel(ctx)
	defer stop()

	go func() {
		// A campaign blocks until elected: end it when etcd goes away or
		// the lease dies meanwhile.
		select {
		case <-gone:
		case <-session.Done():
		case <-campaignCtx.Done():
		}

		stop()
	}()

	if err := t.election.Campaign(campaignCtx, o.opts.Candidate); err != nil {
		t.close()
		return nil, fmt.Errorf("campaign: %w", err)
	}

	return t, nil
}

// hold keeps the term until ctx ends or the lease may be lost. The lease
// counts as lost two thirds of a TTL after its last renewal: the etcd side
// cannot expire it earlier than a full TTL after that renewal was sent,
// so the IP is gone here before anyone else can win.
func (t *term) hold(ctx context.Context) string {
	limit := t.ttl * 2 / 3
	tick := time.NewTicker(limit / 8)

	defer tick.Stop()

	for {
		select {
		case <-ctx.Done():
			return "stopping"
		case <-t.gone:
			return "etcd stopped on this node"
		case <-t.session.Done():
			return "the election lease ended"
		case <-t.kaDone:
			return "the lease keepalive ended"
		case now := <-tick.C:
			if since := now.Sub(time.Unix(0, t.lastRenewal.Load())); since > limit {
				return fmt.Sprintf("no lease renewal for %v", since.Round(time.Millisecond))
			}
		}
	}
}

// resign gives the election up and revokes the lease (shutdown), then
// closes the term.
func (t *term) resign() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()

	_ = t.election.Resign(ctx) //nolint:errcheck // the lease revocation below frees the key anyway
	_ = t.session.Close()      //nolint:errcheck // revokes the lease; expiry covers a failure
	t.cancel()
}

// close ends the term without a clean resignation (lost, or never won):
// the lease is revoked if etcd still answers.
func (t *term) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	_, _ = t.cli.Revoke(ctx, t.lease) //nolint:errcheck // expiry covers a failure
	t.cancel()
}
