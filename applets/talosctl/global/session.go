package global

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/check"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

// Session is the connection an API command works through: one client to
// the context's endpoints with per-node routing or, in insecure
// (maintenance) mode, one client per node dialled directly, since a node
// without a config has no certificates to proxy with.
type Session struct {
	Nodes    []string
	insecure bool
	// ControlPlanes are the nodes `health` runs the etcd checks on.
	ControlPlanes []string

	Shared  *client.Client
	perNode map[string]*client.Client

	// KubeClient talks to the cluster's API server (health); kubeServer,
	// when set, replaces the kubeconfig's server (--k8s-endpoint).
	KubeClient *kubernetes.Client
	KubeServer string
}

// connect opens the session for the command's flags. The caller closes it.
func (g *Args) connect(insecure bool) (*Session, error) {
	if insecure {
		return g.connectInsecure()
	}

	cfg, err := g.LoadTalosconfig()
	if err != nil {
		return nil, err
	}

	_, ctx, err := cfg.Current(g.Context)
	if err != nil {
		return nil, fmt.Errorf("talosconfig: %w", err)
	}

	opts, err := client.OptionsFromContext(ctx, g.Endpoints)
	if err != nil {
		return nil, err
	}

	c, err := client.New(opts)
	if err != nil {
		return nil, err
	}

	nodes := g.Nodes
	if len(nodes) == 0 {
		nodes = ctx.Nodes
	}

	return &Session{Nodes: nodes, Shared: c}, nil
}

func (g *Args) connectInsecure() (*Session, error) {
	nodes := g.Nodes
	if len(nodes) == 0 {
		nodes = g.Endpoints
	}

	if len(nodes) == 0 {
		return nil, errors.New("--insecure needs the nodes to reach: use --nodes")
	}

	s := &Session{Nodes: nodes, insecure: true, perNode: map[string]*client.Client{}}

	for _, n := range nodes {
		c, err := client.New(client.Options{Endpoints: []string{n}, Insecure: true})
		if err != nil {
			s.Close()
			return nil, err
		}

		s.perNode[n] = c
	}

	return s, nil
}

// On is the session narrowed to nodes, sharing its connections.
func (s *Session) On(nodes []string) *Session {
	n := *s
	n.Nodes = nodes

	return &n
}

// Close releases every connection.
func (s *Session) Close() {
	if s.Shared != nil {
		s.Shared.Close()
	}

	for _, c := range s.perNode {
		c.Close()
	}
}

// Client is the connection that reaches node.
func (s *Session) Client(node string) *client.Client {
	if s.insecure {
		return s.perNode[node]
	}

	return s.Shared
}

// nodeCall is one node's part of a command.
type nodeCall[T any] func(ctx context.Context, c *client.Client) (T, error)

// FanOut runs call against every target node in parallel; results come
// back in the order the nodes were given.
func FanOut[T any](ctx context.Context, s *Session, call nodeCall[T]) []client.Result[T] {
	return client.FanOut(ctx, s.Nodes, func(ctx context.Context, node string) (T, error) {
		ctx, c := s.Reach(context.WithValue(ctx, NodeKey{}, node), node)

		return call(ctx, c)
	})
}

type NodeKey struct{}

// NodeOf is the -n value a fanOut call runs for ("" for the endpoint).
func NodeOf(ctx context.Context) string {
	n, _ := ctx.Value(NodeKey{}).(string)
	return n
}

// Cluster is the session as the cluster checks reach it: through the
// session's connections, its Kubernetes client shared.
func (s *Session) Cluster() *check.Cluster {
	return &check.Cluster{
		Nodes: s.Nodes, ControlPlanes: s.ControlPlanes,
		Endpoint: s.NodeName("", nil), KubeServer: s.KubeServer, Kube: s.KubeClient,
		Reach: s.Reach,
	}
}

// Reach is the connection to node, and ctx as it goes there: in insecure
// mode each node is its own endpoint, with no routing metadata.
func (s *Session) Reach(ctx context.Context, node string) (context.Context, *client.Client) {
	if s.insecure {
		return client.WithoutNode(ctx), s.Client(node)
	}

	return ctx, s.Shared
}

// Kube is the cluster's API server client, from the first control plane's
// admin kubeconfig, fetched once.
func (s *Session) Kube(ctx context.Context) (*kubernetes.Client, error) {
	if s.KubeClient == nil {
		k, err := s.Cluster().Kubernetes(ctx)
		if err != nil {
			return nil, err
		}

		s.KubeClient = k
	}

	return s.KubeClient, nil
}

// WithSession connects, runs fn and closes.
func (g *Args) WithSession(insecure bool, fn func(s *Session) error) error {
	s, err := g.connect(insecure)
	if err != nil {
		return err
	}
	defer s.Close()

	return fn(s)
}

// NodeName is how a row names its node: the -n value, else the hostname
// the node reported, else the endpoint that answered.
func (s *Session) NodeName(node string, md *common.Metadata) string {
	if node != "" {
		return node
	}

	if h := md.GetHostname(); h != "" {
		return h
	}

	if s.Shared != nil && len(s.Shared.Endpoints()) > 0 {
		host, _, _ := strings.Cut(s.Shared.Endpoints()[0], ":")
		return host
	}

	return ""
}

// ReportErrors prints each failed node's error to stderr and returns a
// silent exit error when any failed, so the other nodes' output stands and
// the exit code still says something went wrong.
func ReportErrors[T any](cmd *cobra.Command, results []client.Result[T]) error {
	failed := false

	for _, r := range results {
		if r.Err == nil {
			continue
		}

		failed = true

		fmt.Fprintln(cmd.ErrOrStderr(), (&client.NodeError{Node: r.Node, Err: r.Err}).Error())
	}

	if failed {
		return &ExitError{Code: 1}
	}

	return nil
}

// NewTable is the column layout talosctl uses everywhere: three spaces
// between columns.
func NewTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
}

// LineWriter serializes whole lines from concurrent node streams, each
// prefixed with its node, so lines from two nodes never interleave mid-line.
type LineWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (lw *LineWriter) Printf(format string, args ...any) {
	lw.mu.Lock()
	defer lw.mu.Unlock()

	fmt.Fprintf(lw.W, format, args...)
}

// PrefixLines writes data line by line with prefix; a trailing partial line
// is returned so the caller can complete it with the next chunk.
func (lw *LineWriter) PrefixLines(prefix string, pending, data []byte) []byte {
	buf := append(pending, data...)

	lw.mu.Lock()
	defer lw.mu.Unlock()

	for {
		i := strings.IndexByte(string(buf), '\n')
		if i < 0 {
			return buf
		}

		fmt.Fprintf(lw.W, "%s%s\n", prefix, buf[:i])
		buf = buf[i+1:]
	}
}

// SingleNode refuses several nodes for commands whose output is one byte
// stream (read, copy to stdout), where nodes could not be told apart.
func SingleNode(s *Session) error {
	if len(s.Nodes) > 1 {
		return fmt.Errorf("this command works on one node at a time, got %d: %s", len(s.Nodes), strings.Join(s.Nodes, ","))
	}

	return nil
}
