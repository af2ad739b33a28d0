package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/client"
)

// ErrNoAdmin: the node hands the admin kubeconfig to os:admin clients only.
var ErrNoAdmin = errors.New("getting a kubeconfig needs the os:admin role")

// FromNode is a client built from the admin kubeconfig the control plane c
// reaches hands out (ctx routes the call to it); server, when given,
// replaces the kubeconfig's.
func FromNode(ctx context.Context, c *client.Client, server string) (*Client, error) {
	data, err := c.Kubeconfig(ctx)
	if status.Code(err) == codes.PermissionDenied {
		return nil, ErrNoAdmin
	}

	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %s", client.Message(err))
	}

	return FromKubeconfig(data, server)
}
