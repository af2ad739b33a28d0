package network

import (
	"context"
	"fmt"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// Options configure networkd's controllers.
type Options struct {
	// NetNSPath is the network namespace to manage, e.g.
	// /run/netns/NAME; empty means the process's own, used without
	// setns(2). Every netlink socket is opened there, so the controllers
	// are not confused by goroutines changing threads.
	NetNSPath string
	// KernelCmdline is the kernel command line (ip=, talos.hostname=);
	// empty in container mode.
	KernelCmdline string
	// NodeID seeds the default hostname talos-xxx-yyy.
	NodeID string
	// PlatformHostname is the hostname the platform gives the node (a
	// Docker node's container hostname); it beats the default and loses
	// to the cmdline and the config, as on Talos's container platform.
	PlatformHostname string
	// Platform is the network config the platform hands over (NoCloud's
	// network-config and meta-data): every spec is added at
	// LayerPlatform, above ip= and below the machine config. A link it
	// configures gets no default DHCP.
	Platform *network.PlatformConfigSpec
	// PlatformFetch, when set, gets the platform's network config over
	// the network (NoCloud's ds=nocloud-net;s=URL seed): it runs once
	// networkd has started, may block until the network is up (retrying
	// as it likes) and its answer replaces Platform.
	PlatformFetch func(ctx context.Context) (*network.PlatformConfigSpec, error)
	// Hostname applies the hostname: KernelHostname on metal,
	// FileHostname in container mode; nil only records it.
	Hostname HostnameSetter
	// EtcDir receives resolv.conf and hosts; empty renders nothing.
	EtcDir string
	// Operators builds DHCP (and later VIP) operators; nil leaves
	// OperatorSpecs pending with an ApplyIssue.
	Operators OperatorFactory
	// DefaultDHCP runs DHCP on the first Ethernet link at the default
	// layer when neither ip= nor the config configures that link, as
	// Talos does on metal: a machine in maintenance mode gets an address.
	DefaultDHCP bool
}

// Controllers returns networkd's controllers for opts, in pipeline order.
func Controllers(opts Options) []bus.Controller {
	o := &opts

	ctrls := []bus.Controller{
		// the platform's network config (NoCloud), as a resource
		NewPlatformConfigController(o),
		// config: machine config + cmdline -> layered specs
		NewLinkConfigController(o),
		NewAddressConfigController(o),
		NewRouteConfigController(o),
		NewHostnameConfigController(o),
		NewResolverConfigController(o),
		NewTimeServerConfigController(o),
		NewOperatorConfigController(o),
		// merge: layered specs -> final specs
		&mergeController[network.LinkSpecSpec]{name: "network.LinkMergeController", typ: network.LinkSpecType, combine: mergeLinks},
		newMerge[network.AddressSpecSpec]("network.AddressMergeController", network.AddressSpecType),
		newMerge[network.RouteSpecSpec]("network.RouteMergeController", network.RouteSpecType),
		newMerge[network.HostnameSpecSpec]("network.HostnameMergeController", network.HostnameSpecType),
		newMerge[network.ResolverSpecSpec]("network.ResolverMergeController", network.ResolverSpecType),
		newMerge[network.TimeServerSpecSpec]("network.TimeServerMergeController", network.TimeServerSpecType),
		newMerge[network.OperatorSpecSpec]("network.OperatorMergeController", network.OperatorSpecType),
		// spec: final specs -> kernel, files, operators
		NewLinkSpecController(o),
		NewAddressSpecController(o),
		NewRouteSpecController(o),
		NewHostnameSpecController(o),
		&ResolverSpecController{},
		&TimeServerSpecController{},
		NewOperatorSpecController(o),
		NewNfTablesChainController(o),
		// status: kernel -> statuses, and what derives from them
		NewLinkStatusController(o),
		NewAddressStatusController(o),
		NewRouteStatusController(o),
		&NodeAddressController{},
		&HardwareAddrController{},
		NewNetworkStatusController(o),
	}

	if opts.EtcDir != "" {
		ctrls = append(ctrls, NewEtcFileController(o))
	}

	return ctrls
}

// Register adds networkd's controllers to rt, before rt.Run. They read the
// MachineConfig resource (config/MachineConfigs/v1alpha1) from the same
// bus and work on the namespace in opts. The resource definitions are in
// Definitions.
func Register(rt *bus.Runtime, opts Options) error {
	for _, c := range Controllers(opts) {
		if err := rt.Register(c); err != nil {
			return fmt.Errorf("networkd: %w", err)
		}
	}

	return nil
}
