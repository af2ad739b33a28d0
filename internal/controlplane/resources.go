package controlplane

import (
	"context"
	"fmt"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/machine"
	etcdres "github.com/talosbox/talosbox/internal/resources/etcd"
)

// The etcd resources, as Talos names them.
const (
	resourceOwner = "etcd"
)

// publishEtcdSpec records the options the member is started with.
func publishEtcdSpec(ctx context.Context, n *machine.Node, opts etcd.Options) error {
	spec := etcdres.EtcdSpecSpec{
		Name:                  opts.Name,
		AdvertisedAddresses:   opts.AdvertisePeerURLs,
		ListenPeerAddresses:   opts.ListenPeerURLs,
		ListenClientAddresses: opts.ListenClientURLs,
		ExtraArgs:             opts.ExtraArgs,
	}

	return writeResource(ctx, n, etcdres.EtcdSpecType, etcdres.EtcdSpecID, spec.DeepCopy())
}

// publishMember records the running member's ID; srv nil removes it.
func publishMember(ctx context.Context, n *machine.Node, srv *etcd.Server) error {
	p := bus.Pointer{Namespace: etcdres.EtcdNamespace, Type: etcdres.EtcdMemberType, ID: etcdres.EtcdMemberID}

	if srv == nil {
		if err := n.Store().Destroy(ctx, p, bus.WithOwner(resourceOwner)); err != nil && !bus.IsNotFound(err) {
			return err
		}

		return nil
	}

	return writeResource(ctx, n, etcdres.EtcdMemberType, etcdres.EtcdMemberID, etcdres.EtcdMemberSpec{MemberID: fmt.Sprintf("%x", srv.MemberID())})
}

func writeResource[S any](ctx context.Context, n *machine.Node, typ, id string, spec S) error {
	_, err := n.Store().Modify(ctx, bus.NewTyped(etcdres.EtcdNamespace, typ, id, spec), func(r bus.Resource) error {
		*r.(*bus.Typed[S]).TypedSpec() = spec //nolint:forcetypeassert // our own type

		return nil
	}, bus.WithOwner(resourceOwner))

	return err
}
