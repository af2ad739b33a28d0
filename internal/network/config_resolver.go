package network

import (
	"fmt"
	"net/netip"
	"slices"
)

// Talos's default resolvers.
var defaultResolvers = []netip.Addr{netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("8.8.8.8")}

// NewResolverConfigController builds the ResolverSpec: Talos's default
// servers, ip= dns0/dns1 (cmdline), machine.network.nameservers and
// searchDomains (configuration).
func NewResolverConfigController(opts *Options) *configController[ResolverSpecSpec] {
	return &configController[ResolverSpecSpec]{name: "network.ResolverConfigController", typ: ResolverSpecType, opts: opts, build: buildResolvers}
}

func buildResolvers(src *source, out *layeredSet[ResolverSpecSpec], is issues) {
	out.add(ResolverID, ResolverSpecSpec{DNSServers: slices.Clone(defaultResolvers), Layer: LayerDefault})

	if len(src.cmdline.DNSServers) > 0 {
		out.add(ResolverID, ResolverSpecSpec{DNSServers: slices.Clone(src.cmdline.DNSServers), Layer: LayerCmdline})
	}

	if src.net == nil || (len(src.net.Nameservers) == 0 && len(src.net.SearchDomains) == 0) {
		return
	}

	spec := ResolverSpecSpec{SearchDomains: slices.Clone(src.net.SearchDomains), Layer: LayerConfiguration}

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

	out.add(ResolverID, spec)
}
