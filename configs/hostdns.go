package configs

// HostDNSEnabled says whether cfg turns the host DNS forwarder on, and
// whether the kubelet's resolv.conf should point pods (CoreDNS) at it.
func HostDNSEnabled(cfg *Config) (enabled, forwardKubeDNS bool) {
	if cfg == nil || cfg.Machine == nil || cfg.Machine.Features == nil || cfg.Machine.Features.HostDNS == nil {
		return false, false
	}

	h := cfg.Machine.Features.HostDNS
	enabled = h.Enabled != nil && *h.Enabled

	return enabled, enabled && h.ForwardKubeDNSToHost != nil && *h.ForwardKubeDNSToHost
}
