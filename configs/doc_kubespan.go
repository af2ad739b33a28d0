package configs

import (
	"net/netip"
	"strings"
)

// KubeSpanConfig is Talos's KubeSpanConfig: the KubeSpan WireGuard mesh.
// It is machine.network.kubespan. talosbox has no KubeSpan yet: a document
// that enables it is refused (the v1alpha1 section only warns, as
// Talos's generated configs carry it), one that leaves it off is
// accepted.
type KubeSpanConfig struct {
	Enabled                     *bool                  `yaml:"enabled,omitempty"`
	AdvertiseKubernetesNetworks *bool                  `yaml:"advertiseKubernetesNetworks,omitempty"`
	AllowDownPeerBypass         *bool                  `yaml:"allowDownPeerBypass,omitempty"`
	HarvestExtraEndpoints       *bool                  `yaml:"harvestExtraEndpoints,omitempty"`
	MTU                         *uint32                `yaml:"mtu,omitempty"`
	Filters                     *KubeSpanFiltersConfig `yaml:"filters,omitempty"`
}

// KubeSpanFiltersConfig limits what KubeSpan advertises.
type KubeSpanFiltersConfig struct {
	Endpoints                 []string `yaml:"endpoints,omitempty"`
	ExcludeAdvertisedNetworks []string `yaml:"excludeAdvertisedNetworks,omitempty"`
}

// Kind implements Document.
func (*KubeSpanConfig) Kind() string { return "KubeSpanConfig" }

func (k *KubeSpanConfig) check(v *validator, path string) {
	if k.Enabled != nil && *k.Enabled {
		v.errorf(path+".enabled", "talosbox does not implement KubeSpan yet: set enabled: false (or remove the document); "+
			"a WireguardConfig link does what KubeSpan would between the nodes")
	}

	if k.MTU != nil && *k.MTU < kubeSpanMinMTU {
		v.errorf(path+".mtu", "kubespan link MTU must be at least %d, got %d", kubeSpanMinMTU, *k.MTU)
	}

	if fl := k.Filters; fl != nil {
		for i, e := range fl.Endpoints {
			if _, ok := subnetOrAddress(strings.TrimPrefix(e, "!")); !ok {
				v.errorf(indexPath(path+".filters.endpoints", i), "KubeSpan endpoint filter is not valid: %q (want a subnet or an address, optionally negated with !)", e)
			}
		}
	}
}

// subnetOrAddress reads a subnet, or an address as its host prefix.
func subnetOrAddress(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p, true
	}

	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, false
	}

	return netip.PrefixFrom(a, a.BitLen()), true
}

// fold: Talos refuses a KubeSpanConfig beside machine.network.kubespan.
// enabled is not folded: it is refused when true, and the v1alpha1
// section's warning would say so again.
func (k *KubeSpanConfig) fold(f *folding) {
	if w := f.written.Machine; w != nil && w.Network != nil && w.Network.KubeSpan != nil {
		f.problem("", "kubespan is already configured in v1alpha1 machine.network.kubespan: configure it in one place")
	}

	out := &KubeSpan{}
	f.network().KubeSpan = out

	if k.AdvertiseKubernetesNetworks != nil {
		out.AdvertiseKubernetesNetworks = *k.AdvertiseKubernetesNetworks
	}

	if k.AllowDownPeerBypass != nil {
		out.AllowDownPeerBypass = *k.AllowDownPeerBypass
	}

	if k.HarvestExtraEndpoints != nil {
		out.HarvestExtraEndpoints = ptr(*k.HarvestExtraEndpoints)
	}

	if k.MTU != nil {
		out.MTU = *k.MTU
	}

	if fl := k.Filters; fl != nil {
		out.Filters = &KubeSpanFilters{ExcludeAdvertisedNetworks: fl.ExcludeAdvertisedNetworks}

		for _, e := range fl.Endpoints {
			// v1alpha1 takes subnets only; Talos's document an address too.
			// One that is neither is refused by check.
			neg, rest := strings.HasPrefix(e, "!"), strings.TrimPrefix(e, "!")

			p, ok := subnetOrAddress(rest)
			if !ok {
				continue
			}

			rest = p.String()

			if neg {
				rest = "!" + rest
			}

			out.Filters.Endpoints = append(out.Filters.Endpoints, rest)
		}
	}

	f.alias("machine.network.kubespan", "")
}
