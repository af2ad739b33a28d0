package network

import (
	"context"
	"fmt"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// NetworkStatusController sums the network up in one NetworkStatus: the
// Talos readiness bits plus the open ApplyIssues.
type NetworkStatusController struct{ opts *Options }

// NewNetworkStatusController makes the controller.
func NewNetworkStatusController(opts *Options) *NetworkStatusController {
	return &NetworkStatusController{opts: opts}
}

func (c *NetworkStatusController) Name() string { return "network.StatusController" }

func (c *NetworkStatusController) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: network.Namespace, Type: network.NodeAddressType, ID: network.NodeAddressesCur},
		{Namespace: network.Namespace, Type: network.RouteStatusType},
		{Namespace: network.Namespace, Type: network.HostnameStatusType},
		{Namespace: network.Namespace, Type: network.EtcFileStatusType},
		{Namespace: network.Namespace, Type: network.ApplyIssueType},
	}
}

func (c *NetworkStatusController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.NetworkStatusType}}
}

func (c *NetworkStatusController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		var st network.NetworkStatusSpec

		node, err := bus.GetAs[*network.NodeAddress](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.NodeAddressType, ID: network.NodeAddressesCur})
		if err != nil && !bus.IsNotFound(err) {
			return err
		}

		st.AddressReady = node != nil && len(node.TypedSpec().Addresses) > 0

		routes, err := bus.ListAs[*network.RouteStatus](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.RouteStatusType})
		if err != nil {
			return err
		}

		for _, rt := range routes {
			if s := rt.TypedSpec(); !s.Destination.IsValid() && s.Gateway.IsValid() {
				st.ConnectivityReady = true // a default route through a gateway
			}
		}

		if _, err := r.Get(ctx, bus.Pointer{Namespace: network.Namespace, Type: network.HostnameStatusType, ID: network.HostnameID}); err == nil {
			st.HostnameReady = true
		}

		files, err := r.List(ctx, bus.Kind{Namespace: network.Namespace, Type: network.EtcFileStatusType})
		if err != nil {
			return err
		}

		st.EtcFilesReady = c.opts.EtcDir == "" || len(files) == 2

		iss, err := bus.ListAs[*network.ApplyIssue](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.ApplyIssueType})
		if err != nil {
			return err
		}

		for _, is := range iss {
			st.Issues = append(st.Issues, fmt.Sprintf("%s: %s (%s)", is.Metadata().ID, is.TypedSpec().Message, is.TypedSpec().State))
		}

		return syncOutputs(ctx, r, c.Name(), network.Namespace, network.NetworkStatusType, map[string]network.NetworkStatusSpec{network.NetworkStatusID: st})
	})
}
