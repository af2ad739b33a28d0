package talosctl

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

// session is the connection an API command works through: one client to
// the context's endpoints with per-node routing or, in insecure
// (maintenance) mode, one client per node dialled directly, since a node
// without a config has no certificates to proxy with.
type session struct {
	nodes    []string
	insecure bool
	// controlPlanes are the nodes `health` runs the etcd checks on.
	controlPlanes []string

	shared  *client.Client
	perNode map[string]*client.Client

	// kubeClient talks to the cluster's API server (health); kubeServer,
	// when set, replaces the kubeconfig's server (--k8s-endpoint).
	kubeClient *kubernetes.Client
	kubeServer string
}

// connect opens the session for the command's flags. The caller closes it.
func (g *GlobalFlags) connect(insecure bool) (*session, error) {
	if insecure {
		return g.connectInsecure()
	}

	cfg, err := g.loadTalosconfig()
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

	return &session{nodes: nodes, shared: c}, nil
}

func (g *GlobalFlags) connectInsecure() (*session, error) {
	nodes := g.Nodes
	if len(nodes) == 0 {
		nodes = g.Endpoints
	}

	if len(nodes) == 0 {
		return nil, errors.New("--insecure needs the nodes to reach: use --nodes")
	}

	s := &session{nodes: nodes, insecure: true, perNode: map[string]*client.Client{}}

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

// on is the session narrowed to nodes, sharing its connections.
func (s *session) on(nodes []string) *session {
	n := *s
	n.nodes = nodes

	return &n
}

// Close releases every connection.
func (s *session) Close() {
	if s.shared != nil {
		s.shared.Close()
	}

	for _, c := range s.perNode {
		c.Close()
	}
}

// client is the connection that reaches node.
func (s *session) client(node string) *client.Client {
	if s.insecure {
		return s.perNode[node]
	}

	return s.shared
}

// nodeCall is one node's part of a command.
type nodeCall[T any] func(ctx context.Context, c *client.Client) (T, error)

// fanOut runs call against every target node in parallel; results come
// back in the order the nodes were given.
func fanOut[T any](ctx context.Context, s *session, call nodeCall[T]) []client.Result[T] {
	return client.FanOut(ctx, s.nodes, func(ctx context.Context, node string) (T, error) {
		ctx, c := s.reach(context.WithValue(ctx, nodeKey{}, node), node)

		return call(ctx, c)
	})
}

type nodeKey struct{}

// nodeOf is the -n value a fanOut call runs for ("" for the endpoint).
func nodeOf(ctx context.Context) string {
	n, _ := ctx.Value(nodeKey{}).(string)
	return n
}

// cluster is the session as the cluster checks reach it: through the
// session's connections, its Kubernetes client shared.
func (s *session) cluster() *check.Cluster {
	return &check.Cluster{
		Nodes: s.nodes, ControlPlanes: s.controlPlanes,
		Endpoint: s.nodeName("", nil), KubeServer: s.kubeServer, Kube: s.kubeClient,
		Reach: s.reach,
	}
}

// reach is the connection to node, and ctx as it goes there: in insecure
// mode each node is its own endpoint, with no routing metadata.
func (s *session) reach(ctx context.Context, node string) (context.Context, *client.Client) {
	if s.insecure {
		return client.WithoutNode(ctx), s.client(node)
	}

	return ctx, s.shared
}

// kube is the cluster's API server client, from the first control plane's
// admin kubeconfig, fetched once.
func (s *session) kube(ctx context.Context) (*kubernetes.Client, error) {
	if s.kubeClient == nil {
		k, err := s.cluster().Kubernetes(ctx)
		if err != nil {
			return nil, err
		}

		s.kubeClient = k
	}

	return s.kubeClient, nil
}

// withSession connects, runs fn and closes.
func (g *GlobalFlags) withSession(insecure bool, fn func(s *session) error) error {
	s, err := g.connect(insecure)
	if err != nil {
		return err
	}
	defer s.Close()

	return fn(s)
}

// nodeName is how a row names its node: the -n value, else the hostname
// the node reported, else the endpoint that answered.
func (s *session) nodeName(node string, md *common.Metadata) string {
	if node != "" {
		return node
	}

	if h := md.GetHostname(); h != "" {
		return h
	}

	if s.shared != nil && len(s.shared.Endpoints()) > 0 {
		host, _, _ := strings.Cut(s.shared.Endpoints()[0], ":")
		return host
	}

	return ""
}

// reportErrors prints each failed node's error to stderr and returns a
// silent exit error when any failed, so the other nodes' output stands and
// the exit code still says something went wrong.
func reportErrors[T any](cmd *cobra.Command, results []client.Result[T]) error {
	failed := false

	for _, r := range results {
		if r.Err == nil {
			continue
		}

		failed = true

		fmt.Fprintln(cmd.ErrOrStderr(), (&client.NodeError{Node: r.Node, Err: r.Err}).Error())
	}

	if failed {
		return &exitError{code: 1}
	}

	return nil
}

// newTable is the column layout talosctl uses everywhere: three spaces
// between columns.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
}

// lineWriter serializes whole lines from concurrent node streams, each
// prefixed with its node, so lines from two nodes never interleave mid-line.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (lw *lineWriter) printf(format string, args ...any) {
	lw.mu.Lock()
	defer lw.mu.Unlock()

	fmt.Fprintf(lw.w, format, args...)
}

// prefixLines writes data line by line with prefix; a trailing partial line
// is returned so the caller can complete it with the next chunk.
func (lw *lineWriter) prefixLines(prefix string, pending, data []byte) []byte {
	buf := append(pending, data...)

	lw.mu.Lock()
	defer lw.mu.Unlock()

	for {
		i := strings.IndexByte(string(buf), '\n')
		if i < 0 {
			return buf
		}

		fmt.Fprintf(lw.w, "%s%s\n", prefix, buf[:i])
		buf = buf[i+1:]
	}
}
