package network

import (
	"slices"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// DefaultTimeServer is Talos's default NTP server.
const DefaultTimeServer = "time.cloudflare.com"

// NewTimeServerConfigController builds the TimeServerSpec: Talos's
// default, ip= ntp0 (cmdline), machine.time.servers (configuration).
func NewTimeServerConfigController(opts *Options) *configController[network.TimeServerSpecSpec] {
	return &configController[network.TimeServerSpecSpec]{name: "network.TimeServerConfigController", typ: network.TimeServerSpecType, opts: opts, build: buildTimeServers}
}

func buildTimeServers(src *source, out *layeredSet[network.TimeServerSpecSpec], _ issues) {
	out.add(network.TimeServerID, network.TimeServerSpecSpec{NTPServers: []string{DefaultTimeServer}, Layer: network.LayerDefault})

	if len(src.cmdline.NTPServers) > 0 {
		out.add(network.TimeServerID, network.TimeServerSpecSpec{NTPServers: slices.Clone(src.cmdline.NTPServers), Layer: network.LayerCmdline})
	}

	if src.cfg != nil && src.cfg.Machine != nil && src.cfg.Machine.Time != nil && len(src.cfg.Machine.Time.Servers) > 0 {
		out.add(network.TimeServerID, network.TimeServerSpecSpec{NTPServers: slices.Clone(src.cfg.Machine.Time.Servers), Layer: network.LayerConfiguration})
	}
}
