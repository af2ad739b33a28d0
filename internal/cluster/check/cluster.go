// Package check holds the cluster health checks `talosctl health` runs and
// `talosctl cluster create` waits for, in the order Talos runs them: etcd
// on the control planes, every node's API, boot and services, then
// Kubernetes' nodes, static pods and workloads. The checks run from the
// client, through the node API and the cluster's API server.
package check

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

// Cluster is the cluster the checks look at and how they reach it. The
// checks and Discover fill in what they learn (more nodes, the control
// planes, the Kubernetes client), so a Cluster is used by one caller at a
// time.
type Cluster struct {
	// Nodes are every node to check; ControlPlanes the ones running etcd
	// (discovered when nil).
	Nodes, ControlPlanes []string
	// Reach is the connection to a node's API.
	Reach client.Reach
	// Endpoint names the node that answers when Nodes is empty.
	Endpoint string
	// KubeServer, when set, replaces the kubeconfig's API server address.
	KubeServer string
	// Kube is the cluster's API server client, fetched from the first
	// control plane's admin kubeconfig on first use when nil.
	Kube *kubernetes.Client
	// OnPass, when set, is told the name of each check as it passes:
	// cluster create stamps them on its timeline.
	OnPass func(check string)
}

// Kubernetes is the cluster's API server client.
func (c *Cluster) Kubernetes(ctx context.Context) (*kubernetes.Client, error) {
	if c.Kube != nil {
		return c.Kube, nil
	}

	if len(c.ControlPlanes) == 0 {
		return nil, errors.New("no control plane node to get a kubeconfig from")
	}

	r := FanOut(ctx, c, c.ControlPlanes[:1], func(ctx context.Context, cl *client.Client) (*kubernetes.Client, error) {
		return kubernetes.FromNode(ctx, cl, c.KubeServer)
	})[0]
	if r.Err != nil {
		return nil, r.Err
	}

	c.Kube = r.Value

	return c.Kube, nil
}

// FanOut runs call against nodes' APIs in parallel; results come back in
// the order of nodes.
func FanOut[T any](ctx context.Context, c *Cluster, nodes []string, call func(ctx context.Context, cl *client.Client) (T, error)) []client.Result[T] {
	return client.FanOut(ctx, nodes, func(ctx context.Context, node string) (T, error) {
		ctx, cl := c.Reach(ctx, node)
		return call(ctx, cl)
	})
}

// name is how a message names a node.
func (c *Cluster) name(node string) string {
	if node == "" {
		return c.Endpoint
	}

	return node
}

// NodeErrors reports every failing node of a fan-out in one error.
func NodeErrors[T any](c *Cluster, results []client.Result[T]) error {
	var msgs []string

	for _, r := range results {
		if r.Err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %s", c.name(r.Node), client.Message(r.Err)))
		}
	}

	if len(msgs) == 0 {
		return nil
	}

	return errors.New(strings.Join(msgs, "; "))
}

// QuoteNodes is a node list as the checks print it: "10.5.0.2" "10.5.0.3".
func QuoteNodes(nodes []string) string {
	q := make([]string, len(nodes))
	for i, n := range nodes {
		q[i] = fmt.Sprintf("%q", n)
	}

	return strings.Join(q, " ")
}
