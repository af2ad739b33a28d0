package configs

import (
	"net/netip"
	"time"
)

// TimeSyncConfig is Talos's TimeSyncConfig: time synchronization. It is
// machine.time (disabled, servers, bootTimeout); like Talos, a config
// sets it in one of the two places. NTS and PTP are refused: talosbox's
// time sync speaks plain NTP only.
type TimeSyncConfig struct {
	Enabled     *bool         `yaml:"enabled,omitempty"`
	BootTimeout time.Duration `yaml:"bootTimeout,omitempty"`
	NTP         *NTPConfig    `yaml:"ntp,omitempty"`
	PTP         *PTPConfig    `yaml:"ptp,omitempty"`
}

// NTPConfig are the NTP servers.
type NTPConfig struct {
	Servers []string `yaml:"servers,omitempty"`
	UseNTS  *bool    `yaml:"useNTS,omitempty"`
}

// PTPConfig are PTP clock devices.
type PTPConfig struct {
	Devices []string `yaml:"devices,omitempty"`
}

// Kind implements Document.
func (*TimeSyncConfig) Kind() string { return "TimeSyncConfig" }

// check: bootTimeout and the servers are machine.time's, checked there
// under this document's name.
func (t *TimeSyncConfig) check(v *validator, path string) {
	if t.NTP != nil && t.PTP != nil {
		v.errorf(path, "only one of ntp or ptp configuration can be specified")
	}

	if t.PTP != nil {
		v.errorf(path+".ptp", "talosbox does not implement PTP time sync yet: it syncs the clock over NTP; use ntp.servers")
	}

	if n := t.NTP; n != nil && n.UseNTS != nil && *n.UseNTS {
		for i, s := range n.Servers {
			if _, err := netip.ParseAddr(s); err == nil {
				v.errorf(indexPath(path+".ntp.servers", i), "NTS requires hostnames, not IP addresses: %q", s)
			}
		}

		v.errorf(path+".ntp.useNTS", "talosbox does not implement NTS (authenticated NTP) yet: remove useNTS, or set it to false")
	}
}

func (t *TimeSyncConfig) servers() []string {
	if t.NTP == nil {
		return nil
	}

	return t.NTP.Servers
}

// fold: Talos refuses a TimeSyncConfig beside a machine.time that
// disables time sync, names servers or sets a boot timeout.
func (t *TimeSyncConfig) fold(f *folding) {
	if w := f.written.Machine; w != nil && w.Time != nil {
		switch {
		case w.Time.Disabled:
			f.problem("", "time sync cannot be disabled in both v1alpha1 and new-style configuration (machine.time.disabled is set): "+
				"configure time sync in one place")
		case len(w.Time.Servers) > 0:
			f.problem("", "time servers cannot be specified in both v1alpha1 and new-style configuration (machine.time.servers is set): "+
				"configure time sync in one place")
		case w.Time.BootTimeout != 0:
			f.problem("", "boot timeout cannot be specified in both v1alpha1 and new-style configuration (machine.time.bootTimeout is set): "+
				"configure time sync in one place")
		}
	}

	m := f.machine()
	if m.Time == nil {
		m.Time = &TimeConfig{}
	}

	if t.Enabled != nil && !*t.Enabled {
		m.Time.Disabled = true
		f.alias("machine.time.disabled", "enabled")
	}

	if t.BootTimeout != 0 {
		m.Time.BootTimeout = t.BootTimeout
		f.alias("machine.time.bootTimeout", "bootTimeout")
	}

	for i, s := range t.servers() {
		m.Time.Servers = append(m.Time.Servers, s)
		f.alias(indexPath("machine.time.servers", len(m.Time.Servers)-1), indexPath("ntp.servers", i))
	}
}
