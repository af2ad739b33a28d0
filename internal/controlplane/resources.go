package controlplane

import (
	"context"
	"fmt"
	"slices"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/discovery"
	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/machine"
)

// The etcd resources, as Talos names them.
const (
	EtcdNamespace  = "etcd"
	EtcdMemberType = "EtcdMembers.etcd.talos.dev"
	EtcdSpecType   = "EtcdSpecs.etcd.talos.dev"

	// EtcdMemberID and EtcdSpecID name the singletons.
	EtcdMemberID = "local"
	EtcdSpecID   = "etcd"

	resourceOwner = "etcd"
)

// Definitions are the resource types a Plane publishes, with discovery's:
// machined registers them for `talosctl get`.
var Definitions = append([]bus.Definition{
	{Type: EtcdMemberType, DefaultNamespace: EtcdNamespace, Aliases: []string{"etcdmember", "em"},
		PrintColumns: []bus.PrintColumn{{Name: "MEMBER ID", JSONPath: "{.memberId}"}}},
	{Type: EtcdSpecType, DefaultNamespace: EtcdNamespace, Aliases: []string{"etcdspec", "es"},
		PrintColumns: []bus.PrintColumn{{Name: "NAME", JSONPath: "{.name}"}, {Name: "ADVERTISED", JSONPath: "{.advertisedAddresses}"}}},
}, discovery.Definitions...)

// EtcdMemberSpec is this node's member ID, in hex as `etcd members` shows it.
type EtcdMemberSpec struct {
	MemberID string `yaml:"memberId" json:"memberId"`
}

// EtcdMember is an EtcdMembers resource.
type EtcdMember = bus.Typed[EtcdMemberSpec]

// EtcdSpecSpec is what the member runs with.
type EtcdSpecSpec struct {
	Name                  string            `yaml:"name" json:"name"`
	AdvertisedAddresses   []string          `yaml:"advertisedAddresses" json:"advertisedAddresses"`
	ListenPeerAddresses   []string          `yaml:"listenPeerAddresses" json:"listenPeerAddresses"`
	ListenClientAddresses []string          `yaml:"listenClientAddresses" json:"listenClientAddresses"`
	ExtraArgs             map[string]string `yaml:"extraArgs,omitempty" json:"extraArgs,omitempty"`
}

// DeepCopy copies the lists and the map.
func (s EtcdSpecSpec) DeepCopy() EtcdSpecSpec {
	s.AdvertisedAddresses = slices.Clone(s.AdvertisedAddresses)
	s.ListenPeerAddresses = slices.Clone(s.ListenPeerAddresses)
	s.ListenClientAddresses = slices.Clone(s.ListenClientAddresses)

	if s.ExtraArgs != nil {
		m := make(map[string]string, len(s.ExtraArgs))
		for k, v := range s.ExtraArgs {
			m[k] = v
		}

		s.ExtraArgs = m
	}

	return s
}

// EtcdSpec is an EtcdSpecs resource.
type EtcdSpec = bus.Typed[EtcdSpecSpec]

// publishEtcdSpec records the options the member is started with.
func publishEtcdSpec(ctx context.Context, n *machine.Node, opts etcd.Options) error {
	spec := EtcdSpecSpec{
		Name:                  opts.Name,
		AdvertisedAddresses:   opts.AdvertisePeerURLs,
		ListenPeerAddresses:   opts.ListenPeerURLs,
		ListenClientAddresses: opts.ListenClientURLs,
		ExtraArgs:             opts.ExtraArgs,
	}

	return writeResource(ctx, n, EtcdSpecType, EtcdSpecID, spec.DeepCopy())
}

// publishMember records the running member's ID; srv nil removes it.
func publishMember(ctx context.Context, n *machine.Node, srv *etcd.Server) error {
	p := bus.Pointer{Namespace: EtcdNamespace, Type: EtcdMemberType, ID: EtcdMemberID}

	if srv == nil {
		if err := n.Store().Destroy(ctx, p, bus.WithOwner(resourceOwner)); err != nil && !bus.IsNotFound(err) {
			return err
		}

		return nil
	}

	return writeResource(ctx, n, EtcdMemberType, EtcdMemberID, EtcdMemberSpec{MemberID: fmt.Sprintf("%x", srv.MemberID())})
}

func writeResource[S any](ctx context.Context, n *machine.Node, typ, id string, spec S) error {
	_, err := n.Store().Modify(ctx, bus.NewTyped(EtcdNamespace, typ, id, spec), func(r bus.Resource) error {
		*r.(*bus.Typed[S]).TypedSpec() = spec //nolint:forcetypeassert // our own type

		return nil
	}, bus.WithOwner(resourceOwner))

	return err
}
