package machine

import (
	"fmt"
	"io"
	"maps"

	"github.com/talosbox/talosbox/internal/sysctl"
)

// KernelDefaults are the sysctls a metal node sets before the config's
// own (which win): what the kubelet's protectKernelDefaults checks, and
// what pod networking needs from a kernel whose defaults are a desktop's.
// Talos sets the same ones (KernelParamDefaultsController).
var KernelDefaults = map[string]string{
	// The kubelet refuses to start when these differ (protectKernelDefaults).
	"vm.overcommit_memory":      "1",
	"vm.panic_on_oom":           "0",
	"kernel.panic":              "10",
	"kernel.panic_on_oops":      "1",
	"kernel.keys.root_maxkeys":  "1000000",
	"kernel.keys.root_maxbytes": "25000000",
	// Pods are routed by the node; bridged pod traffic must pass
	// kube-proxy's iptables rules (a reply from a Service's pod to a
	// client on the same bridge is un-DNATed only then).
	"net.ipv4.ip_forward":                 "1",
	"net.ipv6.conf.all.forwarding":        "1",
	"net.bridge.bridge-nf-call-iptables":  "1",
	"net.bridge.bridge-nf-call-ip6tables": "1",
}

// applyKernelDefaults writes KernelDefaults under the config's sysctls;
// a key this kernel lacks (bridge keys without br_netfilter) is reported,
// not fatal: the node boots, and the kubelet names what it misses.
func applyKernelDefaults(user map[string]string, procSys string, w io.Writer) error {
	defaults := maps.Clone(KernelDefaults)
	for k := range user {
		delete(defaults, k)
	}

	if err := sysctl.Apply(defaults, procSys); err != nil {
		fmt.Fprintf(w, "[talos] kernel defaults: %v\n", err)
	}

	return sysctl.Apply(user, procSys)
}
