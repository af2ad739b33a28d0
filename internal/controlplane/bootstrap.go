package controlplane

// talosctl bootstrap: a request handed to the etcd service while it waits
// to join, answered at once with the reason when the service cannot take
// it (no address to advertise, not loaded, failing), rather than left
// hanging until the client's deadline.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/talosbox/talosbox/internal/etcd"
)

// ErrNotReady: etcd cannot take a bootstrap now; the error says why.
var ErrNotReady = errors.New("etcd cannot be bootstrapped yet")

// bootstrapHandoff bounds how long Bootstrap waits for the etcd service to
// take a request while nothing says it cannot: the service is between
// two steps (starting, restarting after a failure).
const bootstrapHandoff = 5 * time.Second

// noAddress is what the etcd service waits for on a node with no address
// but loopback.
const noAddress = "the node has no address but loopback: etcd waits for one to advertise to its peers " +
	"(talosctl get addresses; a machine.network config that leaves no address is the usual cause)"

// bootstrapRequest asks the waiting etcd service to start a new cluster.
type bootstrapRequest struct {
	// snapshot, when set, is restored first (bootstrap --recover-from).
	snapshot      string
	skipHashCheck bool
	done          chan error
}

// setEtcdBlocked records why the etcd service cannot take a bootstrap
// request now ("" once it can, or runs) and wakes Bootstrap.
func (p *Plane) setEtcdBlocked(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()

	if p.etcdBlocked == reason {
		return
	}

	p.etcdBlocked = reason
	close(p.etcdChanged)
	p.etcdChanged = make(chan struct{})
}

// etcdState describes the etcd service for an error message.
func (p *Plane) etcdState() string {
	p.mu.Lock()
	n := p.node
	p.mu.Unlock()

	sup := n.Supervisor()
	if sup == nil {
		return "the node has no services yet"
	}

	st, ok := sup.Status("etcd")
	if !ok {
		return "the etcd service is not loaded (machined --etcd=false, or the config has no cluster.etcd.ca key)"
	}

	msg := ""
	if len(st.Events) > 0 {
		msg = ": " + st.Events[len(st.Events)-1].Message
	}

	return fmt.Sprintf("the etcd service is %s%s", st.State, msg)
}

// Bootstrap starts a new cluster on this node (talosctl bootstrap). With
// recover it restores the snapshot uploaded by Recover first. It fails at
// once, saying why, when the etcd service cannot take the request.
func (p *Plane) Bootstrap(ctx context.Context, recover, skipHashCheck bool) error {
	p.mu.Lock()
	cfg, n := p.cfg, p.node
	p.mu.Unlock()

	if !isControlPlane(cfg) {
		return errors.New("bootstrap can only be performed on a control plane node")
	}

	if srv, _ := p.server(); srv != nil || etcd.IsInitialized(dataDir(n)) {
		return ErrAlreadyBootstrapped
	}

	if p.opts.NoEtcd {
		return fmt.Errorf("%w: etcd does not run on this node (machined --etcd=false)", ErrNotReady)
	}

	if sup := n.Supervisor(); sup != nil {
		if _, ok := sup.Status("etcd"); !ok {
			return fmt.Errorf("%w: %s", ErrNotReady, p.etcdState())
		}
	}

	req := bootstrapRequest{skipHashCheck: skipHashCheck, done: make(chan error, 1)}

	if recover {
		req.snapshot = recoverPath(n)
		if _, err := os.Stat(req.snapshot); err != nil {
			return fmt.Errorf("no uploaded snapshot to recover from: %w", err)
		}
	}

	if err := p.handOff(ctx, req); err != nil {
		return err
	}

	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handOff gives req to the etcd service, unless it says it cannot take
// it or does not within bootstrapHandoff.
func (p *Plane) handOff(ctx context.Context, req bootstrapRequest) error {
	deadline := time.NewTimer(bootstrapHandoff)
	defer deadline.Stop()

	for {
		p.mu.Lock()
		blocked, changed := p.etcdBlocked, p.etcdChanged
		p.mu.Unlock()

		if blocked != "" {
			return fmt.Errorf("%w: %s", ErrNotReady, blocked)
		}

		select {
		case p.bootstrap <- req:
			return nil
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("%w: etcd did not take the request within %s: %s", ErrNotReady, bootstrapHandoff, p.etcdState())
		case <-ctx.Done():
			return fmt.Errorf("etcd did not take the bootstrap request: %s: %w", p.etcdState(), ctx.Err())
		}
	}
}

// bootstrapMember starts a one-member cluster, from a snapshot if asked.
func (p *Plane) bootstrapMember(ctx context.Context, opts etcd.Options, req bootstrapRequest, log io.Writer) (*etcd.Server, error) {
	mode := etcd.Bootstrap

	if req.snapshot != "" {
		if err := os.RemoveAll(opts.DataDir); err != nil {
			return nil, err
		}

		if err := etcd.Restore(req.snapshot, opts, req.skipHashCheck); err != nil {
			return nil, err
		}

		os.Remove(req.snapshot) //nolint:errcheck // restored; best effort
		fmt.Fprintln(log, "etcd recovered from the uploaded snapshot")

		mode = etcd.Resume
	}

	fmt.Fprintln(log, "bootstrapping etcd: a new one-member cluster")

	return etcd.Start(ctx, opts, mode)
}
