package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// Pacing of a watch that broke: re-watching at once could spin on a member
// that keeps cancelling, waiting long leaves the list stale.
const (
	watchBackoffMin = 250 * time.Millisecond
	watchBackoffMax = 10 * time.Second
)

// Watch follows the records under KeyPrefix: it reads them all (calling
// changed with the list), then applies etcd's watch events from the next
// revision on, calling changed after each batch that alters the list. A
// compacted watch reads everything again at once; a cancelled or closed
// one after a backoff. Watch returns the error of a read that fails (the
// member lost its leader, or its client closed): the caller knows the
// list is stale and falls back to polling.
func (r EtcdRegistry) Watch(ctx context.Context, changed func([]cluster.AffiliateSpec)) error {
	backoff := watchBackoffMin

	for {
		recs, rev, err := r.read(ctx)
		if ctx.Err() != nil {
			return nil
		}

		if err != nil {
			return err
		}

		changed(recs.list())

		started := time.Now()
		err = r.follow(ctx, recs, rev, changed)

		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errCompacted):
			// The events we missed are gone: a fresh read catches up,
			// and there is nothing wrong to wait out.
			continue
		}

		if time.Since(started) > watchBackoffMax {
			backoff = watchBackoffMin
		}

		if !sleep(ctx, jitter(backoff)) {
			return nil
		}

		backoff = min(2*backoff, watchBackoffMax)
	}
}

var errCompacted = errors.New("discovery: watch compacted")

// records are the decoded records by etcd key, with the bytes they came
// from: a node republishing the same record under a new lease is no change.
type records map[string]record

type record struct {
	raw  []byte
	spec cluster.AffiliateSpec
}

// list is the records in key order, as List returns them.
func (rs records) list() []cluster.AffiliateSpec {
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}

	slices.Sort(keys)

	out := make([]cluster.AffiliateSpec, 0, len(keys))
	for _, k := range keys {
		out = append(out, rs[k].spec.DeepCopy())
	}

	return out
}

// apply applies one event and says whether the list changed. A record that
// does not decode counts as absent, as List skips it.
func (rs records) apply(ev *clientv3.Event) bool {
	key := string(ev.Kv.Key)
	old, had := rs[key]

	if ev.Type == mvccpb.DELETE {
		delete(rs, key)
		return had
	}

	if had && bytes.Equal(old.raw, ev.Kv.Value) {
		return false
	}

	spec, ok := decodeRecord(ev.Kv.Value)
	if !ok {
		delete(rs, key)
		return had
	}

	rs[key] = record{raw: bytes.Clone(ev.Kv.Value), spec: spec}

	return true
}

// read is every record and the revision they were read at.
func (r EtcdRegistry) read(ctx context.Context) (records, int64, error) {
	// Bounded, as a refresh's call is: a member that cannot answer must
	// break the watch, so its readers fall back, rather than hang it.
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()

	resp, err := r.Client.Get(ctx, KeyPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("discovery: watch: read: %w", err)
	}

	recs := records{}

	for _, kv := range resp.Kvs {
		if a, ok := decodeRecord(kv.Value); ok {
			recs[string(kv.Key)] = record{raw: bytes.Clone(kv.Value), spec: a}
		}
	}

	return recs, resp.Header.Revision, nil
}

// follow applies the events after rev until the watch ends, and says why.
func (r EtcdRegistry) follow(ctx context.Context, recs records, rev int64, changed func([]cluster.AffiliateSpec)) error {
	// RequireLeader: a member cut off from the quorum cancels the watch
	// instead of serving a list that no longer changes.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()

	for resp := range r.Client.Watch(wctx, KeyPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if resp.CompactRevision != 0 {
			return errCompacted
		}

		if err := resp.Err(); err != nil {
			return fmt.Errorf("discovery: watch: %w", err)
		}

		dirty := false

		for _, ev := range resp.Events {
			if strings.HasPrefix(string(ev.Kv.Key), KeyPrefix) && recs.apply(ev) {
				dirty = true
			}
		}

		if dirty {
			changed(recs.list())
		}
	}

	return errors.New("discovery: watch: closed")
}

// jitter spreads d over [d/2, d], so nodes that broke together do not all
// come back at the same instant.
func jitter(d time.Duration) time.Duration { return d/2 + rand.N(d/2+1) }

// sleep waits d, or less if ctx ends first (false then).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()

	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
