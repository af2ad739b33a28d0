package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// Registry is where a cluster's affiliates meet.
type Registry interface {
	// Publish stores (or refreshes) one node's record; it expires unless
	// published again within the registry's TTL.
	Publish(ctx context.Context, a cluster.AffiliateSpec) error
	// List returns every live record.
	List(ctx context.Context) ([]cluster.AffiliateSpec, error)
}

// Watcher is a Registry that tells of changes as they happen, so nodes
// converge in the time a change takes to travel rather than in a polling
// interval.
type Watcher interface {
	// Watch calls changed with every live record once it watches, then
	// again after every change, until ctx ends (nil) or the watch breaks
	// (an error). changed runs on Watch's goroutine, owns the slice, and
	// must not block.
	Watch(ctx context.Context, changed func([]cluster.AffiliateSpec)) error
}

// Remover is a Registry that can delete a record before its lease runs
// out: a node leaving for good (a graceful reset) disappears from every
// node's Members at once.
type Remover interface {
	Remove(ctx context.Context, nodeID string) error
}

// KeyPrefix is where records live in etcd.
const KeyPrefix = "talos:v1:discovery:affiliates:"

// DefaultTTL is how long a record outlives its node's last publish.
const DefaultTTL = 30 * time.Second

// EtcdRegistry keeps records in etcd, each under a lease of TTL.
type EtcdRegistry struct {
	Client *clientv3.Client
	// TTL is the record lease, DefaultTTL when zero.
	TTL time.Duration
}

var (
	_ Watcher = EtcdRegistry{}
	_ Remover = EtcdRegistry{}
)

// Publish writes a under a fresh lease; the previous lease of the key
// expires with nothing attached.
func (r EtcdRegistry) Publish(ctx context.Context, a cluster.AffiliateSpec) error {
	if err := a.Validate(); err != nil {
		return err
	}

	data, err := json.Marshal(a)
	if err != nil {
		return err
	}

	ttl := r.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}

	lease, err := r.Client.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return fmt.Errorf("discovery: lease: %w", err)
	}

	if _, err := r.Client.Put(ctx, KeyPrefix+a.NodeID, string(data), clientv3.WithLease(lease.ID)); err != nil {
		return fmt.Errorf("discovery: publish %s: %w", a.NodeID, err)
	}

	return nil
}

// List reads every record; a record that does not decode or validate is
// skipped rather than hiding the rest.
func (r EtcdRegistry) List(ctx context.Context) ([]cluster.AffiliateSpec, error) {
	resp, err := r.Client.Get(ctx, KeyPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("discovery: list: %w", err)
	}

	out := make([]cluster.AffiliateSpec, 0, len(resp.Kvs))

	for _, kv := range resp.Kvs {
		if a, ok := decodeRecord(kv.Value); ok {
			out = append(out, a)
		}
	}

	return out, nil
}

// Remove deletes nodeID's record; the other nodes' watches drop it at once.
func (r EtcdRegistry) Remove(ctx context.Context, nodeID string) error {
	if err := cluster.ValidateNodeID(nodeID); err != nil {
		return fmt.Errorf("discovery: remove: %w", err)
	}

	if _, err := r.Client.Delete(ctx, KeyPrefix+nodeID); err != nil {
		return fmt.Errorf("discovery: remove %s: %w", nodeID, err)
	}

	return nil
}

// decodeRecord is a stored record, if it decodes and validates.
func decodeRecord(data []byte) (cluster.AffiliateSpec, bool) {
	var a cluster.AffiliateSpec
	if json.Unmarshal(data, &a) != nil || a.Validate() != nil {
		return cluster.AffiliateSpec{}, false
	}

	return a, true
}
