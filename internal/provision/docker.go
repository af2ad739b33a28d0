package provision

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Sentinel errors, for errors.Is; the returned errors wrap them with the details.
var (
	// ErrEngineUnreachable: the Docker Engine did not answer a ping.
	ErrEngineUnreachable = errors.New("cannot reach the Docker Engine")
	// ErrInvalidRequest: a request failed validation; nothing was touched.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrNameInUse: the cluster name, or a container, network or volume name it needs, is taken.
	ErrNameInUse = errors.New("name in use")
	// ErrSubnetOverlap: the requested subnet overlaps an existing Docker network's subnet.
	ErrSubnetOverlap = errors.New("subnet overlaps an existing network")
	// ErrImageNotFound: the image is not in the local image store (images are never pulled).
	ErrImageNotFound = errors.New("image not found locally")
	// ErrNotFound: no object carries the cluster's label, or the cluster has no such node.
	ErrNotFound = errors.New("not found")
)

// DefaultStopTimeout is how long Destroy (and a rollback) lets each node's PID 1 shut down
// after SIGTERM before Docker kills it. It is short because destroy throws the state away.
const DefaultStopTimeout = 3 * time.Second

// pingTimeout bounds New's ping: a TCP DOCKER_HOST that drops packets would otherwise hang the
// CLI until the caller's context ends, which for an interactive command is never.
const pingTimeout = 10 * time.Second

// Options configure [New].
type Options struct {
	// Host is the Engine address, e.g. "unix:///var/run/docker.sock" or "tcp://host:2376".
	// Empty means $DOCKER_HOST, then the platform default socket. TLS settings always come from
	// $DOCKER_CERT_PATH and $DOCKER_TLS_VERIFY, as for the docker CLI.
	Host string
	// StopTimeout is the SIGTERM grace period Destroy gives each container (rounded up to whole
	// seconds, Docker's granularity); 0 means DefaultStopTimeout.
	StopTimeout time.Duration
}

// Docker is a connection to one Docker Engine. Its methods are safe for concurrent use.
type Docker struct {
	api         *client.Client
	stopTimeout time.Duration
}

// New connects to the Docker Engine, negotiates the API version and pings it, so that an
// unreachable engine is reported here, once and clearly, rather than by the first real call.
// The error wraps ErrEngineUnreachable when the engine does not answer.
func New(ctx context.Context, opts Options) (*Docker, error) {
	clientOpts := []client.Opt{client.FromEnv}
	if opts.Host != "" {
		// After FromEnv so that an explicit Host wins over $DOCKER_HOST.
		clientOpts = append(clientOpts, client.WithHost(opts.Host))
	}
	api, err := client.New(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", opts.Host, err)
	}

	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := api.Ping(pingCtx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		_ = api.Close()
		host := api.DaemonHost()
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("connecting to the Docker Engine at %s: %w", host, context.Cause(ctx))
		case client.IsErrConnectionFailed(err) || errors.Is(err, context.DeadlineExceeded):
			// The dial error alone says what went wrong; the client's wrapping repeats the host.
			cause := err
			var opErr *net.OpError
			if errors.As(err, &opErr) {
				cause = opErr
			}
			return nil, fmt.Errorf("%w at %s: %w (is dockerd running? set DOCKER_HOST)", ErrEngineUnreachable, host, cause)
		default:
			// It answered, but not as a usable engine (e.g. an API version below 1.40).
			return nil, fmt.Errorf("the Docker Engine at %s answered but cannot be used: %w", host, err)
		}
	}

	stop := opts.StopTimeout
	if stop <= 0 {
		stop = DefaultStopTimeout
	}
	return &Docker{api: api, stopTimeout: stop}, nil
}

// Host returns the Engine address in use, for messages.
func (d *Docker) Host() string { return d.api.DaemonHost() }

// APIVersion returns the negotiated Engine API version, for messages and bug reports.
func (d *Docker) APIVersion() string { return d.api.ClientVersion() }

// Close releases idle connections to the engine.
func (d *Docker) Close() error { return d.api.Close() }

// stopSeconds converts a grace period to Docker's whole seconds, rounding up so that a
// sub-second request still gives PID 1 a chance to exit cleanly.
func stopSeconds(timeout time.Duration) *int {
	s := int(math.Ceil(timeout.Seconds()))
	if s < 0 {
		s = 0
	}
	return &s
}

// isNotFound reports whether err is the engine's "no such object" answer.
func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }
