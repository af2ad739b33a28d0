package network

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// Talos's default resolvers.
var defaultResolvers = []netip.Addr{netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("8.8.8.8")}

// NewResolverConfigController builds the ResolverSpec: Talos's default
// servers, ip= dns0/dns1 (cmdline), machine.network.nameservers and
// searchDomains (configuration).
func NewResolverConfigController(opts *Options) *configController[network.ResolverSpecSpec] {
	return &configController[network.ResolverSpecSpec]{name: "network.ResolverConfigController", typ: network.ResolverSpecType, opts: opts, build: buildResolvers}
}

func buildResolvers(src *source, out *layeredSet[network.ResolverSpecSpec], is issues) {
	out.add(network.ResolverID, network.ResolverSpecSpec{DNSServers: slices.Clone(defaultResolvers), Layer: network.LayerDefault})

	if len(src.cmdline.DNSServers) > 0 {
		out.add(network.ResolverID, network.ResolverSpecSpec{DNSServers: slices.Clone(src.cmdline.DNSServers), Layer: network.LayerCmdline})
	}

	for _, spec := range src.platform.Resolvers {
		spec = spec.DeepCopy()
		spec.Layer = network.LayerPlatform
		out.add(network.ResolverID, spec)
	}

	if src.net == nil || (len(src.net.Nameservers) == 0 && len(src.net.SearchDomains) == 0) {
		return
	}

	spec := network.ResolverSpecSpec{SearchDomains: slices.Clone(src.net.SearchDomains), Layer: network.LayerConfiguration}

	for _, s := range src.net.Nameservers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			is.fail("resolver/"+s, fmt.Errorf("nameserver %q: %w", s, err))
			continue
		}

		spec.DNSServers = append(spec.DNSServers, a)
	}

	if len(spec.DNSServers) == 0 {
		// Only search domains were given: keep the servers of lower layers.
		spec.DNSServers = slices.Clone(defaultResolvers)
		if len(src.cmdline.DNSServers) > 0 {
			spec.DNSServers = slices.Clone(src.cmdline.DNSServers)
		}
	}

	out.add(network.ResolverID, spec)
}
