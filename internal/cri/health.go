package cri

import (
	"context"
	"errors"
	"fmt"
	"strings"

	introspection "github.com/containerd/containerd/api/services/introspection/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/talosbox/talosbox/internal/cri/validation"
)

// criHealth is the CRI service's health: containerd serves, and its CRI
// plugins loaded. containerd answers SERVING whatever its plugins did: a
// CRI plugin that refused its config (a runtime whose base_runtime_spec
// is missing, say) leaves a daemon that looks up and runs no pods. The
// plugins' init errors are in containerd's introspection API.
func (c *Containerd) criHealth(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+c.opts.Runtime.CRISocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("containerd health: dial %s: %w", c.opts.Runtime.CRISocket, err)
	}
	defer conn.Close()

	if err := serving(ctx, conn); err != nil {
		return err
	}

	err = criLoaded(ctx, conn)

	_, failed := errors.AsType[*LoadError](err)
	if !failed && err != nil {
		return err // no answer: says nothing of the plugins
	}

	c.loadMu.Lock()
	changed := failed && (c.loadErr == nil || c.loadErr.Error() != err.Error())

	c.loadErr = nil
	if failed {
		c.loadErr = err
	}
	c.loadMu.Unlock()

	if changed && c.opts.OnCRILoadError != nil {
		c.opts.OnCRILoadError(err)
	}

	return err
}

// LoadError is a CRI plugin that did not load.
type LoadError struct {
	// Plugin is its type.ID.
	Plugin string
	// Message is containerd's init error.
	Message string
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("the CRI plugin %s did not load: %s", e.Plugin, e.Message)
}

// criLoaded asks containerd's introspection service how the CRI plugins
// fared. The first of them in load order that failed is reported: the
// ones after it fail because it did.
func criLoaded(ctx context.Context, conn *grpc.ClientConn) error {
	res, err := introspection.NewIntrospectionClient(conn).Plugins(ctx, &introspection.PluginsRequest{})
	if err != nil {
		return fmt.Errorf("containerd health: list plugins: %w", err)
	}

	found := map[string]*introspection.Plugin{}
	for _, p := range res.GetPlugins() {
		found[p.GetType()+"."+p.GetID()] = p
	}

	for _, id := range validation.CRIPlugins {
		p, ok := found[id]
		if !ok {
			return &LoadError{Plugin: id, Message: "not registered or disabled"}
		}

		if ie := p.GetInitErr(); ie != nil {
			return &LoadError{Plugin: id, Message: strings.TrimSpace(ie.GetMessage())}
		}
	}

	return nil
}

// containerdServing is the system instance's health check: containerd's
// own gRPC health service must answer SERVING on its socket.
func containerdServing(ctx context.Context, sock string) error {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("containerd health: dial %s: %w", sock, err)
	}
	defer conn.Close()

	return serving(ctx, conn)
}

func serving(ctx context.Context, conn *grpc.ClientConn) error {
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("containerd health: %w", err)
	}

	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("containerd health: %s", res.GetStatus())
	}

	return nil
}

// CRILoadError is the CRI plugin load error the CRI service's health
// check saw last, nil when none (or it loaded since, or the services were
// made again).
func (c *Containerd) CRILoadError() error {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()

	return c.loadErr
}
