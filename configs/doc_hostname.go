package configs

// HostnameConfig is Talos's HostnameConfig (written by gen config since
// Talos 1.12): the node's hostname, given or made automatically.
type HostnameConfig struct {
	// Auto is stable (a name derived from the machine's identity, the
	// same at every boot) or off (no automatic name: the hostname comes
	// from the platform or DHCP, if anywhere).
	Auto string `yaml:"auto,omitempty"`
	// Hostname is a static hostname (FQDN allowed); only with auto off or
	// unset.
	Hostname string `yaml:"hostname,omitempty"`
}

// The values of HostnameConfig.Auto.
const (
	AutoHostnameStable = "stable"
	AutoHostnameOff    = "off"
)

// Kind implements Document.
func (*HostnameConfig) Kind() string { return "HostnameConfig" }

func (h *HostnameConfig) check(v *validator, path string) {
	if h.Auto == "" && h.Hostname == "" {
		v.errorf(path, "either auto or hostname must be set")
	}

	if h.Auto != AutoHostnameOff && h.Auto != "" && h.Hostname != "" {
		v.errorf(path+".hostname", "auto and hostname cannot be set at the same time (a static hostname needs auto: off or no auto)")
	}

	switch h.Auto {
	case "", AutoHostnameStable, AutoHostnameOff:
	default:
		v.errorf(path+".auto", "invalid value %q: want %s or %s", h.Auto, AutoHostnameStable, AutoHostnameOff)
	}

	// The hostname itself is judged as machine.network.hostname, which
	// it is (and located here).
}

// fold: hostname is machine.network.hostname, auto stable is
// machine.features.stableHostname; auto off is read from the document by
// the network controllers (nothing in v1alpha1 says it).
func (h *HostnameConfig) fold(f *folding) {
	// (What the node reads from the document itself: residue.)
	if w := f.written.Machine; w != nil {
		if w.Network != nil && w.Network.Hostname != "" {
			f.conflict("", "machine.network.hostname", "a static hostname")
		}

		if w.Features != nil && w.Features.StableHostname != nil && *w.Features.StableHostname {
			f.conflict("", "machine.features.stableHostname", "a stable hostname")
		}
	}

	if h.Hostname != "" {
		f.network().Hostname = h.Hostname
		f.alias("machine.network.hostname", "hostname")
	}

	if h.Auto == AutoHostnameStable {
		f.features().StableHostname = ptr(true)
		f.alias("machine.features.stableHostname", "auto")
	}
}

// The sections of the effective config documents fold into, made when
// missing.

func (f *folding) machine() *MachineConfig {
	if f.cfg.Machine == nil {
		f.cfg.Machine = &MachineConfig{}
	}

	return f.cfg.Machine
}

func (f *folding) network() *NetworkConfig {
	m := f.machine()
	if m.Network == nil {
		m.Network = &NetworkConfig{}
	}

	return m.Network
}

func (f *folding) features() *FeaturesConfig {
	m := f.machine()
	if m.Features == nil {
		m.Features = &FeaturesConfig{}
	}

	return m.Features
}

func (f *folding) cluster() *ClusterConfig {
	if f.cfg.Cluster == nil {
		f.cfg.Cluster = &ClusterConfig{}
	}

	return f.cfg.Cluster
}

func ptr[T any](v T) *T { return &v }

// residue is what the node reads from the document itself rather than
// from the v1alpha1 fields it folds into: auto off.
func (h *HostnameConfig) residue() Document {
	if h.Auto == AutoHostnameOff {
		return &HostnameConfig{Auto: h.Auto}
	}

	return nil
}
