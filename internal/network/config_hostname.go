package network

import (
	"crypto/sha256"
	"strings"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// NewHostnameConfigController builds the HostnameSpec: talos-xxx-yyy from
// the node ID (default), ip= or talos.hostname= (cmdline), the
// platform's (a container's hostname), and
// machine.network.hostname (configuration). A DHCP operator adds its own
// at the operator layer, between the last two.
func NewHostnameConfigController(opts *Options) *configController[network.HostnameSpecSpec] {
	return &configController[network.HostnameSpecSpec]{name: "network.HostnameConfigController", typ: network.HostnameSpecType, opts: opts, build: buildHostname}
}

func buildHostname(src *source, out *layeredSet[network.HostnameSpecSpec], _ issues) {
	out.add(network.HostnameID, network.HostnameSpecSpec{Hostname: DefaultHostname(src.nodeID), Layer: network.LayerDefault})

	if h := src.cmdline.Hostname; h != "" {
		out.add(network.HostnameID, splitFQDN(h, network.LayerCmdline))
	}

	if h := src.platformHostname; h != "" {
		out.add(network.HostnameID, splitFQDN(h, network.LayerPlatform))
	}

	for _, spec := range src.platform.Hostnames {
		spec.Layer = network.LayerPlatform
		out.add(network.HostnameID, spec)
	}

	if src.net != nil && src.net.Hostname != "" {
		out.add(network.HostnameID, splitFQDN(src.net.Hostname, network.LayerConfiguration))
	}
}

func splitFQDN(fqdn string, layer network.ConfigLayer) network.HostnameSpecSpec {
	h, d, _ := strings.Cut(fqdn, ".")
	return network.HostnameSpecSpec{Hostname: h, Domainname: d, Layer: layer}
}

// DefaultHostname is "talos-xxx-yyy", stable for a node ID.
func DefaultHostname(nodeID string) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

	sum := sha256.Sum256([]byte(nodeID))

	var b strings.Builder

	b.WriteString("talos-")

	for i := range 6 {
		if i == 3 {
			b.WriteByte('-')
		}

		b.WriteByte(alphabet[int(sum[i])%len(alphabet)])
	}

	return b.String()
}
