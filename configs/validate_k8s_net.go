package configs

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/configs/kubeflags"
	"github.com/talosbox/talosbox/configs/kubeschema"
)

// The defaults Kubernetes and talosbox use when the config says nothing.
const (
	defaultPodSubnet     = "10.244.0.0/16"
	defaultServiceSubnet = "10.96.0.0/12"
	// kube-controller-manager's --node-cidr-mask-size defaults.
	defaultNodeMaskIPv4 = 24
	defaultNodeMaskIPv6 = 64
	// The controller-manager refuses a node mask more than this many bits
	// longer than the cluster CIDR's ("cluster CIDR mask size and node
	// CIDR mask size differ by more than 16 bits").
	maxNodeMaskBits = 16
	// kube-apiserver refuses a service range with more addresses than
	// 2^20 while it keeps the old bitmap allocator
	// (--service-cluster-ip-range "is too large"); see serviceSubnetSizes.
	maxServiceBits = 20
	// The IPAddress allocator refuses IPv6 service ranges shorter than /64.
	minServiceIPv6Prefix = 64
	// The DNS service takes the range's 10th address, so a range needs at
	// least 11 (the network address is never allocated).
	dnsServiceIndex = 10
)

// podAndServiceSubnets checks the cluster's pod and service subnets as
// kube-apiserver, kube-controller-manager and the node's renderers will:
// valid CIDRs, one per family, the same families in the same order for
// both, no overlap, a service range neither too large nor too small for
// the DNS service, and pod subnets large enough to hand each node its
// share (node-cidr-mask-size).
func (v *validator) podAndServiceSubnets(c *ClusterConfig) {
	const p = "cluster.network"

	var podList, svcList []string

	if n := c.Network; n != nil {
		podList, svcList = n.PodSubnets, n.ServiceSubnets
	}

	pods := v.subnets(p+".podSubnets", podList)
	svcs := v.subnets(p+".serviceSubnets", svcList)

	if pods == nil || svcs == nil {
		return // already reported
	}

	if len(podList) == 0 {
		pods = []netip.Prefix{netip.MustParsePrefix(defaultPodSubnet)}
	}

	if len(svcList) == 0 {
		svcs = []netip.Prefix{netip.MustParsePrefix(defaultServiceSubnet)}
	}

	// Pods reach Services in the Services' families, so the pods need
	// them too; and the first (primary) family is the cluster's, for both.
	if pods[0].Addr().Is4() != svcs[0].Addr().Is4() || len(svcs) > len(pods) {
		v.errorf(p, "podSubnets (%s) and serviceSubnets (%s) must be of the same IP families, the same first: pods could not reach Services", families(pods), families(svcs))
	}

	for i, pod := range pods {
		for j, svc := range svcs {
			if pod.Overlaps(svc) {
				v.errorf(indexPath(p+".serviceSubnets", j), "service subnet %s overlaps pod subnet %s (podSubnets[%d]): a Service address would also be a pod's", svc, pod, i)
			}
		}
	}

	for j, svc := range svcs {
		sp := indexPath(p+".serviceSubnets", j)
		hostBits := svc.Addr().BitLen() - svc.Bits()

		// Too large depends on the API server's version: serviceSubnetSizes.
		if hostBits < 64 && 1<<hostBits <= dnsServiceIndex {
			v.errorf(sp, "service subnet %s is too small: it must hold the DNS service's address (the %dth), so at least /%d", svc, dnsServiceIndex, svc.Addr().BitLen()-4)
		}
	}

	v.nodeCIDRMasks(c, pods)
}

// subnets parses a subnet list: one subnet, or two for dual stack (one of
// each family). It returns nil when a problem was reported.
func (v *validator) subnets(p string, subnets []string) []netip.Prefix {
	var (
		out []netip.Prefix
		bad bool
	)

	count := map[bool]int{}

	for i, s := range subnets {
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			v.errorf(indexPath(p, i), "invalid CIDR %q", s)

			bad = true

			continue
		}

		if prefix.Masked() != prefix {
			v.warnf(indexPath(p, i), "%s has host bits set: it means %s", s, prefix.Masked())
		}

		count[prefix.Addr().Is4()]++
		out = append(out, prefix.Masked())
	}

	if count[true] > 1 || count[false] > 1 {
		v.errorf(p, "at most one IPv4 and one IPv6 subnet are allowed")

		bad = true
	}

	if bad {
		return nil
	}

	if out == nil {
		out = []netip.Prefix{}
	}

	return out
}

func families(ps []netip.Prefix) string {
	out := ""

	for i, p := range ps {
		if i > 0 {
			out += ", "
		}

		if p.Addr().Is4() {
			out += "IPv4"
		} else {
			out += "IPv6"
		}
	}

	return out
}

// nodeCIDRMasks checks that every pod subnet can be split into the
// per-node subnets the controller-manager allocates.
func (v *validator) nodeCIDRMasks(c *ClusterConfig, pods []netip.Prefix) {
	var args Args
	if c.ControllerManager != nil {
		args = c.ControllerManager.ExtraArgs
	}

	if s, _ := args.Get("allocate-node-cidrs"); s == "false" {
		return
	}

	for i, pod := range pods {
		key, mask := "node-cidr-mask-size-ipv4", defaultNodeMaskIPv4
		if !pod.Addr().Is4() {
			key, mask = "node-cidr-mask-size-ipv6", defaultNodeMaskIPv6
		}

		argKey := key
		if s, _ := args.Get("node-cidr-mask-size"); len(pods) == 1 && s != "" {
			argKey = "node-cidr-mask-size"
		}

		if s, ok := args.Get(argKey); ok {
			n, err := strconv.Atoi(s)
			if err != nil {
				continue // the flag's own check reports it
			}

			mask = n
		}

		pp := indexPath("cluster.network.podSubnets", i)

		switch {
		case mask < pod.Bits():
			v.errorf(pp, "pod subnet %s is smaller than one node's share (/%d, kube-controller-manager's %s): no node could get pod addresses; use a larger subnet or set cluster.controllerManager.extraArgs[%q]", pod, mask, argKey, argKey)
		case mask > pod.Addr().BitLen():
			v.errorf(keyPath("cluster.controllerManager.extraArgs", argKey), "node CIDR mask /%d is longer than an %s address", mask, families([]netip.Prefix{pod}))
		case mask-pod.Bits() > maxNodeMaskBits:
			v.errorf(pp, "pod subnet %s is split into /%d node subnets: kube-controller-manager refuses masks more than %d bits apart (set %s to at most %d)", pod, mask, maxNodeMaskBits, argKey, pod.Bits()+maxNodeMaskBits)
		}
	}
}

// nodePorts are the ports a node's own services listen on, which another
// configured port must not take.
var nodePorts = map[int]string{
	50000: "apid", 50001: "trustd", 2379: "etcd (clients)", 2380: "etcd (peers)",
	10250: "the kubelet", 10257: "kube-controller-manager", 10259: "kube-scheduler",
}

// ports checks the listening ports the config chooses against each other
// and the node's own.
func (v *validator) ports(c *Config) {
	apiPort := c.LocalAPIServerPort()

	if v.controlPlane() {
		if who, taken := nodePorts[apiPort]; taken {
			v.errorf("cluster.controlPlane.localAPIServerPort", "port %d is %s's: the API server cannot listen there", apiPort, who)
		}
	}

	if c.Machine == nil || c.Machine.Features == nil || c.Machine.Features.KubePrism == nil {
		return
	}

	kp := c.Machine.Features.KubePrism
	if kp.Enabled != nil && !*kp.Enabled {
		return
	}

	port := kp.Port
	if port == 0 {
		return // the default, 7445, is no one else's
	}

	switch who, taken := nodePorts[port]; {
	case v.controlPlane() && port == apiPort:
		v.errorf("machine.features.kubePrism.port", "port %d is the API server's (cluster.controlPlane.localAPIServerPort): KubePrism needs a port of its own", port)
	case taken:
		v.errorf("machine.features.kubePrism.port", "port %d is %s's: KubePrism needs a port of its own", port, who)
	}
}

// serviceSubnetSizes refuses a service range the control plane's
// kube-apiserver would refuse as too large. Its limit depends on the
// allocator it runs (kubernetes cmd/kube-apiserver/app/options/
// validation.go, validateClusterIPFlags): with the old bitmap allocator,
// still written to unless both MultiCIDRServiceAllocator (GA and locked
// on since 1.33) and DisableAllocatorDualWrite (on by default since 1.34)
// are on, a range holds at most 2^20 addresses (/12 for IPv4, /108 for
// IPv6). Without it the IPAddress allocator takes any IPv4 range and IPv6
// ranges of /64 or longer (pkg/registry/core/service/ipallocator,
// NewIPAllocator). A worker runs no API server: the control plane judges.
func (v *validator) serviceSubnetSizes(c *Config) {
	api, ok := v.kubeVersions[kubeflags.APIServer]
	if !ok || c.Cluster == nil || c.Cluster.Network == nil {
		return // no API server here, its version is reported, or the default range
	}

	bitmap := bitmapServiceAllocator(api, c.Cluster.APIServer)

	for i, s := range c.Cluster.Network.ServiceSubnets {
		svc, err := netip.ParsePrefix(s)
		if err != nil {
			continue // reported
		}

		sp := indexPath("cluster.network.serviceSubnets", i)

		switch hostBits := svc.Addr().BitLen() - svc.Bits(); {
		case bitmap && hostBits > maxServiceBits:
			v.errorf(sp, "service subnet %s is too large: kube-apiserver %s allows at most /%d for this family (2^%d addresses) while it keeps the bitmap allocator (feature gates MultiCIDRServiceAllocator and DisableAllocatorDualWrite, both on by default from Kubernetes 1.34, lift the limit)",
				svc, api, svc.Addr().BitLen()-maxServiceBits, maxServiceBits)
		case svc.Addr().Is6() && svc.Bits() < minServiceIPv6Prefix:
			v.errorf(sp, "service subnet %s is too large: kube-apiserver allows IPv6 service ranges of /%d or longer", svc, minServiceIPv6Prefix)
		}
	}
}

// bitmapServiceAllocator reports whether kube-apiserver of version api
// with these extraArgs still allocates Service IPs from (or writes them
// to) the old bitmap: unless both gates of the IPAddress allocator are on.
func bitmapServiceAllocator(api KubeVersion, cfg *APIServerConfig) bool {
	on := map[string]bool{}

	if known, _ := kubeschema.Gates(api.String()); known != nil {
		for _, g := range []string{"MultiCIDRServiceAllocator", "DisableAllocatorDualWrite"} {
			on[g] = known[g].Default
		}
	} else {
		// No gate list for this version: the defaults of the releases.
		on["MultiCIDRServiceAllocator"] = api.Minor >= 33
		on["DisableAllocatorDualWrite"] = api.Minor >= 34
	}

	if cfg != nil {
		for entry := range strings.SplitSeq(cfg.ExtraArgs.Joined("feature-gates"), ",") {
			k, val, _ := strings.Cut(strings.TrimSpace(entry), "=")
			k = strings.TrimPrefix(strings.TrimSpace(k), "kube:")

			if b, err := strconv.ParseBool(strings.TrimSpace(val)); err == nil {
				if _, tracked := on[k]; tracked {
					on[k] = b
				}
			}
		}
	}

	return !on["MultiCIDRServiceAllocator"] || !on["DisableAllocatorDualWrite"]
}
