package apid

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/role"
)

// A container node boots the image it was created from: upgrade and
// rollback say so, and how to upgrade there, and change nothing.
func TestUpgradeRefusedInContainers(t *testing.T) {
	mc := machineClient(dial(t, shared.addr, clientCert(t, string(role.Admin))))
	ctx := testCtx(t)

	_, err := mc.Upgrade(ctx, &machine.UpgradeRequest{Image: "ghcr.io/talosbox/installer:v9.9.9", Force: true})
	wantCode(t, err, codes.Unimplemented, "create it again from a newer image")

	_, err = mc.Upgrade(ctx, &machine.UpgradeRequest{})
	wantCode(t, err, codes.InvalidArgument, "no installer image given")

	_, err = mc.Rollback(ctx, &machine.RollbackRequest{})
	wantCode(t, err, codes.Unimplemented, "upgrade is not supported on this platform")
}
