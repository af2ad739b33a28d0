package etcd

import "github.com/talosbox/talosbox/internal/bus"

// The type's name and IDs, as Talos has them.
const (
	EtcdMemberType = "EtcdMembers.etcd.talos.dev"
	// EtcdMemberID and EtcdSpecID name the singletons.
	EtcdMemberID = "local"
)

// EtcdMemberSpec is this node's member ID, in hex as `etcd members` shows it.
type EtcdMemberSpec struct {
	MemberID string `yaml:"memberId" json:"memberId"`
}

// EtcdMember is an EtcdMembers resource.
type EtcdMember = bus.Typed[EtcdMemberSpec]
