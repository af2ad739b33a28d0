package configs_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const resolverConfigDoc = `apiVersion: v1alpha1
kind: ResolverConfig
nameservers:
  - address: 10.0.0.1
  - address: 2001:4860:4860::8888
    protocol: Do53
searchDomains:
  domains:
    - example.org
    - example.com
  disableDefault: true
hostDNS:
  enabled: true
  forwardKubeDNSToHost: true
  resolveMemberNames: false
`

func TestResolverConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "folds into machine.network and the host DNS feature",
			docs: resolverConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				n := cfg.Machine.Network
				if !reflect.DeepEqual(n.Nameservers, []string{"10.0.0.1", "2001:4860:4860::8888"}) ||
					!reflect.DeepEqual(n.SearchDomains, []string{"example.org", "example.com"}) || !n.DisableSearchDomain {
					t.Errorf("machine.network: %+v", n)
				}

				if on, fwd := configs.HostDNSEnabled(cfg); !on || !fwd {
					t.Errorf("host DNS %v, forward kube DNS %v", on, fwd)
				}

				if h := cfg.Machine.Features.HostDNS; h.ResolveMemberNames == nil || *h.ResolveMemberNames {
					t.Errorf("resolveMemberNames: %v", h.ResolveMemberNames)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: ResolverConfig\nsearchDomains:\n  - example.org\n",
			decodeErr: `ResolverConfig.searchDomains: expected a mapping, got`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: ResolverConfig\nnameservers: [10.0.0.1]\n",
			decodeErr: `ResolverConfig.nameservers[0]: expected a mapping, got`,
		},
		{
			name: "Talos's rules",
			docs: `apiVersion: v1alpha1
kind: ResolverConfig
nameservers:
  - address: 10.0.0.300
  - address: 10.0.0.2
    tlsServerName: dns.example.org
  - address: 10.0.0.3
    protocol: DoQ
  - protocol: do53
hostDNS:
  forwardKubeDNSToHost: true
  resolveMemberNames: true
`,
			errs: []string{
				`ResolverConfig.nameservers[0].address: invalid nameserver address "10.0.0.300"`,
				`ResolverConfig.hostDNS.forwardKubeDNSToHost: hostDNS.forwardKubeDNSToHost cannot be enabled when hostDNS.enabled is false`,
				`ResolverConfig.hostDNS.resolveMemberNames: hostDNS.resolveMemberNames cannot be enabled when hostDNS.enabled is false`,
				`ResolverConfig.nameservers[1].tlsServerName: tlsServerName must be empty when protocol is Do53`,
				`ResolverConfig.nameservers[2].protocol: unsupported DNS protocol "DoQ": want Do53, DoT or DoH`,
				`ResolverConfig.nameservers[3].address: nameserver address must be specified`,
			},
		},
		{
			name: "encrypted DNS",
			docs: "apiVersion: v1alpha1\nkind: ResolverConfig\nnameservers:\n  - address: 9.9.9.9\n    protocol: DoT\n  - address: 1.1.1.1\n    protocol: DoH\n    tlsServerName: cloudflare-dns.com\n",
			errs: []string{
				`ResolverConfig.nameservers[0].tlsServerName: tlsServerName must be set when protocol is DoT`,
				`ResolverConfig.nameservers[0].protocol: talosbox does not implement encrypted DNS (DoT) yet: its host DNS forwards plain DNS; use protocol: Do53 (or leave protocol out)`,
				`ResolverConfig.nameservers[1].protocol: talosbox does not implement encrypted DNS (DoH) yet: its host DNS forwards plain DNS; use protocol: Do53 (or leave protocol out)`,
			},
		},
		{
			// Talos refuses the document beside any of these, whatever the
			// document says.
			name: "machine.network's resolver settings",
			v1:   `machine: {network: {nameservers: [10.0.0.9], searchDomains: [corp.example], disableSearchDomain: true}, features: {hostDNS: {enabled: true}}}`,
			docs: "apiVersion: v1alpha1\nkind: ResolverConfig\nhostDNS:\n  enabled: true\n",
			errs: []string{
				`ResolverConfig: machine.network.searchDomains is set in the v1alpha1 document: with a ResolverConfig, the resolver is configured there alone (Talos refuses both); move them to searchDomains.domains`,
				`ResolverConfig: machine.network.nameservers is set in the v1alpha1 document: with a ResolverConfig, the resolver is configured there alone (Talos refuses both); move them to nameservers`,
				`ResolverConfig: machine.network.disableSearchDomain is set in the v1alpha1 document: with a ResolverConfig, the resolver is configured there alone (Talos refuses both); write searchDomains.disableDefault: true instead`,
				`ResolverConfig.hostDNS: host DNS is already set in the v1alpha1 document (machine.features.hostDNS): set it in one place (Talos refuses both)`,
			},
		},
		{
			// Host DNS beside the document is fine when the document has
			// none.
			name: "machine.features.hostDNS and nameservers in the document",
			v1:   `machine: {features: {hostDNS: {enabled: true}}}`,
			docs: "apiVersion: v1alpha1\nkind: ResolverConfig\nnameservers:\n  - address: 10.0.0.1\n",
			effective: func(t *testing.T, cfg *configs.Config) {
				if on, _ := configs.HostDNSEnabled(cfg); !on || !reflect.DeepEqual(cfg.Machine.Network.Nameservers, []string{"10.0.0.1"}) {
					t.Errorf("host DNS %v, nameservers %v", on, cfg.Machine.Network.Nameservers)
				}
			},
		},
	})
}

func TestResolverConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, resolverConfigDoc)

	checkNetDocPatch(t, resolverConfigDoc, "apiVersion: v1alpha1\nkind: ResolverConfig\nsearchDomains:\n  domains: [example.net]\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := cfg.Machine.Network.SearchDomains; !reflect.DeepEqual(d, []string{"example.org", "example.com", "example.net"}) {
				t.Errorf("after the strategic merge patch: %v", d)
			}
		})

	checkNetDocPatch(t, resolverConfigDoc, `[{"op": "replace", "path": "/ResolverConfig/nameservers/0/address", "value": "10.0.0.2"}, {"op": "remove", "path": "/ResolverConfig/hostDNS"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if n := cfg.Machine.Network.Nameservers; n[0] != "10.0.0.2" {
				t.Errorf("after the JSON patch: %v", n)
			}

			if on, _ := configs.HostDNSEnabled(cfg); on {
				t.Errorf("host DNS still on after the JSON patch removed it")
			}
		})
}
