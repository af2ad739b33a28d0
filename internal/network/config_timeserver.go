package network

import "slices"

// DefaultTimeServer is Talos's default NTP server.
const DefaultTimeServer = "time.cloudflare.com"

// NewTimeServerConfigController builds the TimeServerSpec: Talos's
// default, ip= ntp0 (cmdline), machine.time.servers (configuration).
func NewTimeServerConfigController(opts *Options) *configController[TimeServerSpecSpec] {
	return &configController[TimeServerSpecSpec]{name: "network.TimeServerConfigController", typ: TimeServerSpecType, opts: opts, build: buildTimeServers}
}

func buildTimeServers(src *source, out *layeredSet[TimeServerSpecSpec], _ issues) {
	out.add(TimeServerID, TimeServerSpecSpec{NTPServers: []string{DefaultTimeServer}, Layer: LayerDefault})

	if len(src.cmdline.NTPServers) > 0 {
		out.add(TimeServerID, TimeServerSpecSpec{NTPServers: slices.Clone(src.cmdline.NTPServers), Layer: LayerCmdline})
	}

	if src.cfg != nil && src.cfg.Machine != nil && src.cfg.Machine.Time != nil && len(src.cfg.Machine.Time.Servers) > 0 {
		out.add(TimeServerID, TimeServerSpecSpec{NTPServers: slices.Clone(src.cfg.Machine.Time.Servers), Layer: LayerConfiguration})
	}
}
