package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/common"
)

// NodeMetadataKey is the gRPC metadata apid routes a call by: the node named
// there answers, through the endpoint's apid when it is another node.
const NodeMetadataKey = "node"

// MaxParallel bounds how many nodes a fan-out calls at once, so `-n` with a
// long list does not open hundreds of streams through one endpoint.
const MaxParallel = 16

// WithNode routes calls made with the returned context to node. An empty
// node leaves the context alone: the endpoint itself answers.
func WithNode(ctx context.Context, node string) context.Context {
	if node == "" {
		return ctx
	}

	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(NodeMetadataKey, node)

	return metadata.NewOutgoingContext(ctx, md)
}

// WithoutNode removes the routing WithNode added: a node dialled directly
// (maintenance mode) answers for itself and has nowhere to forward to.
func WithoutNode(ctx context.Context) context.Context {
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok {
		return ctx
	}

	md = md.Copy()
	delete(md, NodeMetadataKey)

	return metadata.NewOutgoingContext(ctx, md)
}

// Result is one node's answer in a fan-out.
type Result[T any] struct {
	Node  string
	Value T
	Err   error
}

// FanOut runs call once per node, in parallel, each with a context routed
// to its node, and returns the results in the order of nodes. No nodes means
// one call to the endpoint itself, reported with an empty Node.
func FanOut[T any](ctx context.Context, nodes []string, call func(ctx context.Context, node string) (T, error)) []Result[T] {
	if len(nodes) == 0 {
		nodes = []string{""}
	}

	results := make([]Result[T], len(nodes))
	sem := make(chan struct{}, MaxParallel)

	var wg sync.WaitGroup

	for i, node := range nodes {
		wg.Add(1)

		go func() {
			defer wg.Done()

			sem <- struct{}{}
			defer func() { <-sem }()

			v, err := call(WithNode(ctx, node), node)
			results[i] = Result[T]{Node: node, Value: v, Err: err}
		}()
	}

	wg.Wait()

	return results
}

// NodeError is a failure of one node in a fan-out.
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string {
	if e.Node == "" {
		return Message(e.Err)
	}

	return fmt.Sprintf("error on node %s: %s", e.Node, Message(e.Err))
}

func (e *NodeError) Unwrap() error { return e.Err }

// Errors joins the failures of results as NodeErrors, or returns nil.
func Errors[T any](results []Result[T]) error {
	var errs []error

	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, &NodeError{Node: r.Node, Err: r.Err})
		}
	}

	return errors.Join(errs...)
}

// MetadataError turns the error a node reported inside a reply (apid's way
// of returning a per-node failure in a proxied reply) into an error.
func MetadataError(md *common.Metadata) error {
	if md == nil || md.GetError() == "" {
		return nil
	}

	return errors.New(md.GetError())
}

// Message is the text of err without gRPC's "rpc error: code = X desc ="
// wrapper, so server errors read as the server wrote them.
func Message(err error) string {
	if err == nil {
		return ""
	}

	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return err.Error()
	}

	inner, _ := se.(error)
	if inner == nil {
		return err.Error()
	}

	// Keep any context wrapped around the status error, drop only gRPC's prefix.
	return strings.Replace(err.Error(), inner.Error(), se.GRPCStatus().Message(), 1)
}
