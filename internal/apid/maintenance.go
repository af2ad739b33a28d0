package apid

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/hardware"
	"github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

// maintenanceMethods are all a node without a config serves, to anyone
// who can reach it (there is no CA to check clients against yet): enough
// to apply a config (`talosctl apply-config --insecure`), to see that the
// node waits for one, and to read what the config is written from
// (`talosctl get disks --insecure`). Talos's maintenance service gives
// such callers os:reader: Reset, Upgrade, MetaWrite and MetaDelete need
// os:admin, which only a SideroLink peer gets, and talosbox has no
// SideroLink, so they stay refused here.
var maintenanceMethods = map[string]bool{
	machine.MachineService_ApplyConfiguration_FullMethodName: true,
	machine.MachineService_Version_FullMethodName:            true,
	resource.ResourceService_Definitions_FullMethodName:      true,
	resource.ResourceService_Get_FullMethodName:              true,
	resource.ResourceService_List_FullMethodName:             true,
	resource.ResourceService_Watch_FullMethodName:            true,
}

// maintenanceTypes are the resource types readable in maintenance mode.
// Talos lets its maintenance callers (os:reader) read every non-sensitive
// type; this is the part of that which a node publishes before it has a
// config: the machine's hardware, disks and network, and its status.
// What follows from a config (Kubernetes, etcd, discovery, time sync,
// the machine type) is left out: it is absent until the node leaves
// maintenance mode. Sensitive types never are in it (the secrets, the
// config, ConfigLoadErrors, whose errors may quote a refused config,
// MetaKeys, which may hold STATE's key, LinkSpecs with WireGuard keys),
// nor OperatorSpecs, which Talos marks sensitive. A test walks every
// definition against this list.
var maintenanceTypes = map[string]bool{
	// The node's state: what `talosctl version/get --insecure` shows.
	runtime.MachineStatusType:      true,
	runtime.MachineStageType:       true,
	runtime.SecurityStateType:      true,
	runtime.ExtensionStatusType:    true,
	v1alpha1.ServiceType:           true,
	cluster.IdentityType:           true,
	hardware.SystemInformationType: true,
	hardware.ProcessorType:         true,
	hardware.MemoryModuleType:      true,

	// What machine.install.disk and machine.disks are chosen from, and
	// STATE's volume on a machine installed before.
	block.DiskType:             true,
	block.BlockDeviceType:      true,
	block.DiscoveredVolumeType: true,
	block.SystemDiskType:       true,
	block.VolumeStatusType:     true,

	// What machine.network is written from, and why the node has (no)
	// address: DHCP, ip= and the platform's config work without one.
	network.LinkStatusType:       true,
	network.AddressStatusType:    true,
	network.RouteStatusType:      true,
	network.HostnameStatusType:   true,
	network.ResolverStatusType:   true,
	network.TimeServerStatusType: true,
	network.NodeAddressType:      true,
	network.HardwareAddrType:     true,
	network.NetworkStatusType:    true,
	network.ApplyIssueType:       true,
	network.EtcFileStatusType:    true,
	network.PlatformConfigType:   true,
	network.AddressSpecType:      true,
	network.RouteSpecType:        true,
	network.HostnameSpecType:     true,
	network.ResolverSpecType:     true,
	network.TimeServerSpecType:   true,
}

// maintenanceReadable says whether a maintenance caller may read def's
// resources. A type marked sensitive is refused even if listed: the mark
// wins over the list.
func maintenanceReadable(def bus.Definition) bool {
	return maintenanceTypes[def.Type] && !def.Sensitive
}

// maintenanceServed is the start of every maintenance refusal: what is
// served instead.
const maintenanceServed = "maintenance mode: only apply-config, version and reading the machine's hardware, disks, network and status are served"

// maintenanceDenied refuses what (a method or a resource type) to a
// maintenance caller.
func maintenanceDenied(what string) error {
	return status.Errorf(codes.PermissionDenied, "%s, not %s", maintenanceServed, what)
}
