package etcd

import (
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name and IDs, as Talos has them.
const (
	EtcdSpecType = "EtcdSpecs.etcd.talos.dev"
	EtcdSpecID   = "etcd"
)

// EtcdSpecSpec is what the member runs with.
type EtcdSpecSpec struct {
	Name                  string       `yaml:"name" json:"name"`
	AdvertisedAddresses   []string     `yaml:"advertisedAddresses" json:"advertisedAddresses"`
	ListenPeerAddresses   []string     `yaml:"listenPeerAddresses" json:"listenPeerAddresses"`
	ListenClientAddresses []string     `yaml:"listenClientAddresses" json:"listenClientAddresses"`
	ExtraArgs             configs.Args `yaml:"extraArgs,omitempty" json:"extraArgs,omitempty"`
}

// DeepCopy copies the lists and the map.
func (s EtcdSpecSpec) DeepCopy() EtcdSpecSpec {
	s.AdvertisedAddresses = slices.Clone(s.AdvertisedAddresses)
	s.ListenPeerAddresses = slices.Clone(s.ListenPeerAddresses)
	s.ListenClientAddresses = slices.Clone(s.ListenClientAddresses)

	s.ExtraArgs = s.ExtraArgs.Clone()

	return s
}

// EtcdSpec is an EtcdSpecs resource.
type EtcdSpec = bus.Typed[EtcdSpecSpec]
