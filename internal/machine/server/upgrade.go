package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/installer"
	imachine "github.com/talosbox/talosbox/internal/machine"
)

// UpgradeMutex is the etcd key prefix of the lock one control plane holds
// while it upgrades (Talos's name).
const UpgradeMutex = "talos:v1:etcdUpgradeMutex"

// upgradeLockTTL is the lock's lease in seconds: it ends this long after
// the upgrading node's etcd stops renewing it (its reboot), and never
// needs an unlock. While that node is down, its member's health refuses
// the next upgrade anyway.
const upgradeLockTTL = 10

// Upgrade writes the installer image into the other boot slot before it
// answers (so a missing image, one without a kernel or a full BOOT is the
// caller's error and changes nothing), then cordons and drains the node
// (when Kubernetes runs there) and reboots. On a control plane,
// unless --force: every etcd member must be healthy, and the cluster-wide
// upgrade lock free.
func (m *machineServer) Upgrade(ctx context.Context, req *machine.UpgradeRequest) (*machine.UpgradeResponse, error) {
	if req.GetImage() == "" {
		return nil, status.Error(codes.InvalidArgument, "upgrade: no installer image given (--image)")
	}

	var unlock func()

	if !req.GetForce() && m.plane != nil {
		if srv, err := m.plane.Server(); err == nil {
			if unlock, err = lockForUpgrade(ctx, srv); err != nil {
				return nil, status.Errorf(codes.FailedPrecondition, "upgrade: %v (--force skips the etcd checks)", err)
			}
		}
	}

	_, err := m.node.Upgrade(ctx, imachine.UpgradeOptions{Image: req.GetImage(), Stage: req.GetStage()})
	if err != nil {
		if unlock != nil {
			unlock()
		}

		return nil, upgradeError(err)
	}

	actor := m.afterReply(ctx, "upgrade", m.node.RebootForUpgrade)

	return &machine.UpgradeResponse{Messages: []*machine.Upgrade{{Ack: "Upgrade request received", ActorId: actor}}}, nil
}

// Rollback points the boot loader back at the previous installation and
// reboots, draining the node first as an upgrade does.
func (m *machineServer) Rollback(ctx context.Context, _ *machine.RollbackRequest) (*machine.RollbackResponse, error) {
	if _, err := m.node.Rollback(ctx); err != nil {
		return nil, upgradeError(err)
	}

	m.afterReply(ctx, "rollback", m.node.RebootForUpgrade)

	return &machine.RollbackResponse{Messages: []*machine.Rollback{{}}}, nil
}

func upgradeError(err error) error {
	switch {
	case errors.Is(err, imachine.ErrUpgradeUnsupported):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, installer.ErrNotInstaller):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return status.Error(codes.DeadlineExceeded, err.Error())
	default:
		return status.Error(codes.FailedPrecondition, err.Error())
	}
}

// lockForUpgrade checks that every etcd member is started and healthy (a
// member going down for its reboot then leaves a quorum), and takes the
// upgrade lock; unlock gives it back when the upgrade does not happen.
func lockForUpgrade(ctx context.Context, srv *etcd.Server) (unlock func(), err error) {
	if err := srv.Healthy(ctx); err != nil {
		return nil, err
	}

	members, err := srv.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd members: %w", err)
	}

	for _, mb := range members {
		if mb.Name == "" || len(mb.ClientURLs) == 0 {
			return nil, fmt.Errorf("etcd member %x is not started; all members must be running to perform an upgrade", mb.ID)
		}

		if mb.IsLearner {
			return nil, fmt.Errorf("etcd member %s is still a learner; wait for it to be promoted before an upgrade", mb.Name)
		}

		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := srv.Client().Status(sctx, mb.ClientURLs[0])

		cancel()

		if err != nil {
			return nil, fmt.Errorf("etcd member %s is not healthy; all members must be healthy to perform an upgrade: %w", mb.Name, err)
		}
	}

	// The lock outlives the reboot it guards by its lease's TTL once etcd
	// is back (etcd renews every lease when it restarts): this node's own
	// lock from before is released first, so that the node that was just
	// upgraded is not refused by itself. The lease is kept in etcd, under
	// the member's name.
	owner := UpgradeMutex + "Owner/" + srv.Name()
	if err := releaseOwnLock(ctx, srv, owner); err != nil {
		return nil, fmt.Errorf("etcd upgrade lock: %w", err)
	}

	sess, err := concurrency.NewSession(srv.Client(), concurrency.WithTTL(upgradeLockTTL), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, fmt.Errorf("etcd upgrade lock: %w", err)
	}

	mu := concurrency.NewMutex(sess, UpgradeMutex)
	if err := mu.TryLock(ctx); err != nil {
		sess.Close()

		if errors.Is(err, concurrency.ErrLocked) {
			return nil, fmt.Errorf("another control plane node is being upgraded (etcd lock %s is held); try again once it is back", UpgradeMutex)
		}

		return nil, fmt.Errorf("etcd upgrade lock: %w", err)
	}

	if _, err := srv.Client().Put(ctx, owner, strconv.FormatInt(int64(sess.Lease()), 16)); err != nil {
		sess.Close()

		return nil, fmt.Errorf("etcd upgrade lock: %w", err)
	}

	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()

		mu.Unlock(uctx)                  //nolint:errcheck // the session's end releases it anyway
		srv.Client().Delete(uctx, owner) //nolint:errcheck // a stale owner record names a dead lease
		sess.Close()
	}, nil
}

// releaseOwnLock revokes the lease of the upgrade lock this member took
// before its last reboot, if any.
func releaseOwnLock(ctx context.Context, srv *etcd.Server, owner string) error {
	resp, err := srv.Client().Get(ctx, owner)
	if err != nil {
		return err
	}

	if len(resp.Kvs) == 0 {
		return nil
	}

	if id, err := strconv.ParseInt(string(resp.Kvs[0].Value), 16, 64); err == nil {
		if _, err := srv.Client().Revoke(ctx, clientv3.LeaseID(id)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return err
		}
	}

	_, err = srv.Client().Delete(ctx, owner)

	return err
}
