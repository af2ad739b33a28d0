// Package network is talosbox's networkd: it turns the machine config and
// the kernel command line into layered network specs, merges them, applies
// the result to the kernel over netlink, and reads the kernel back into
// status resources, all as controllers on the bus (the Talos pipeline:
// XConfig -> XMerge -> XSpec -> kernel -> XStatus).
//
// Everything networkd does to the kernel is bookkept so that it only ever
// removes what it created: routes carry their own rtm_protocol
// (RouteProtocol), created links carry the link alias LinkAlias, and
// addresses are remembered by the controller that added them.
package network

import (
	"strings"
)

// unlayeredID strips the layer from an ID in ConfigNamespace.
func unlayeredID(id string) string {
	_, rest, ok := strings.Cut(id, "/")
	if !ok {
		return id
	}

	return rest
}
