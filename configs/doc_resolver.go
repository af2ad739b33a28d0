package configs

import "strings"

// ResolverConfig is Talos's ResolverConfig: the node's DNS resolvers,
// search domains and host DNS. It is machine.network.nameservers,
// searchDomains and disableSearchDomain, and machine.features.hostDNS;
// like Talos, a config sets the resolver in one of the two places.
// Encrypted DNS (DoT, DoH) is refused: talosbox's host DNS forwards plain
// DNS only.
type ResolverConfig struct {
	Nameservers   []NameserverConfig   `yaml:"nameservers,omitempty"`
	SearchDomains *SearchDomainsConfig `yaml:"searchDomains,omitempty"`
	HostDNS       *HostDNSConfig       `yaml:"hostDNS,omitempty"`
}

// NameserverConfig is one DNS server.
type NameserverConfig struct {
	Address string `yaml:"address"`
	// Protocol is Do53 (plain DNS, the default), DoT or DoH.
	Protocol      string `yaml:"protocol,omitempty"`
	TLSServerName string `yaml:"tlsServerName,omitempty"`
}

// SearchDomainsConfig are the resolver's search domains.
type SearchDomainsConfig struct {
	Domains []string `yaml:"domains,omitempty"`
	// DisableDefault leaves the node's own domain out of the search
	// domains.
	DisableDefault *bool `yaml:"disableDefault,omitempty"`
}

// HostDNSConfig is the host's caching DNS forwarder.
type HostDNSConfig struct {
	Enabled              *bool `yaml:"enabled,omitempty"`
	ForwardKubeDNSToHost *bool `yaml:"forwardKubeDNSToHost,omitempty"`
	ResolveMemberNames   *bool `yaml:"resolveMemberNames,omitempty"`
}

// Kind implements Document.
func (*ResolverConfig) Kind() string { return "ResolverConfig" }

func (r *ResolverConfig) check(v *validator, path string) {
	if h := r.HostDNS; h != nil && (h.Enabled == nil || !*h.Enabled) {
		if h.ForwardKubeDNSToHost != nil && *h.ForwardKubeDNSToHost {
			v.errorf(path+".hostDNS.forwardKubeDNSToHost", "hostDNS.forwardKubeDNSToHost cannot be enabled when hostDNS.enabled is false")
		}

		if h.ResolveMemberNames != nil && *h.ResolveMemberNames {
			v.errorf(path+".hostDNS.resolveMemberNames", "hostDNS.resolveMemberNames cannot be enabled when hostDNS.enabled is false")
		}
	}

	for i, ns := range r.Nameservers {
		p := indexPath(path+".nameservers", i)

		if ns.Address == "" {
			v.errorf(p+".address", "nameserver address must be specified")
		}

		switch strings.ToLower(ns.Protocol) {
		case "", "do53":
			if ns.TLSServerName != "" {
				v.errorf(p+".tlsServerName", "tlsServerName must be empty when protocol is Do53")
			}
		case "dot", "doh":
			if ns.TLSServerName == "" {
				v.errorf(p+".tlsServerName", "tlsServerName must be set when protocol is %s", ns.Protocol)
			}

			v.errorf(p+".protocol", "talosbox does not implement encrypted DNS (%s) yet: its host DNS forwards plain DNS; "+
				"use protocol: Do53 (or leave protocol out)", ns.Protocol)
		default:
			v.errorf(p+".protocol", "unsupported DNS protocol %q: want Do53, DoT or DoH", ns.Protocol)
		}
	}
}

// plain reports whether the nameserver speaks plain DNS (Do53).
func (ns NameserverConfig) plain() bool {
	return ns.Protocol == "" || strings.EqualFold(ns.Protocol, "do53")
}

// fold: Talos refuses a ResolverConfig beside v1alpha1 nameservers,
// search domains or disableSearchDomain, whatever the document says, and
// beside machine.features.hostDNS when the document has hostDNS.
func (r *ResolverConfig) fold(f *folding) {
	if w := f.written.Machine; w != nil && w.Network != nil {
		n := w.Network

		if n.SearchDomains != nil {
			f.problem("", "machine.network.searchDomains is set in the v1alpha1 document: with a ResolverConfig, the resolver is "+
				"configured there alone (Talos refuses both); move them to searchDomains.domains")
		}

		if len(n.Nameservers) > 0 {
			f.problem("", "machine.network.nameservers is set in the v1alpha1 document: with a ResolverConfig, the resolver is "+
				"configured there alone (Talos refuses both); move them to nameservers")
		}

		if n.DisableSearchDomain {
			f.problem("", "machine.network.disableSearchDomain is set in the v1alpha1 document: with a ResolverConfig, the resolver is "+
				"configured there alone (Talos refuses both); write searchDomains.disableDefault: true instead")
		}
	}

	if r.HostDNS != nil {
		if w := f.written.Machine; w != nil && w.Features != nil && w.Features.HostDNS != nil {
			f.conflict("hostDNS", "machine.features.hostDNS", "host DNS")
		}
	}

	n := f.network()

	for i, ns := range r.Nameservers {
		// An empty address is refused by check in the document's words.
		if ns.plain() && ns.Address != "" {
			n.Nameservers = append(n.Nameservers, ns.Address)
			f.alias(indexPath("machine.network.nameservers", len(n.Nameservers)-1), indexPath("nameservers", i)+".address")
		}
	}

	if s := r.SearchDomains; s != nil {
		for i, d := range s.Domains {
			n.SearchDomains = append(n.SearchDomains, d)
			f.alias(indexPath("machine.network.searchDomains", len(n.SearchDomains)-1), indexPath("searchDomains.domains", i))
		}

		if s.DisableDefault != nil && *s.DisableDefault {
			n.DisableSearchDomain = true
			f.alias("machine.network.disableSearchDomain", "searchDomains.disableDefault")
		}
	}

	if h := r.HostDNS; h != nil {
		feat := f.features()
		if feat.HostDNS == nil {
			feat.HostDNS = &HostDNS{}
		}

		for _, o := range []struct {
			src *bool
			dst **bool
		}{{h.Enabled, &feat.HostDNS.Enabled}, {h.ForwardKubeDNSToHost, &feat.HostDNS.ForwardKubeDNSToHost}, {h.ResolveMemberNames, &feat.HostDNS.ResolveMemberNames}} {
			if o.src != nil {
				*o.dst = ptr(*o.src)
			}
		}

		f.alias("machine.features.hostDNS", "hostDNS")
	}
}
