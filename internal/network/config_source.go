package network

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// configInputs are what every config controller reads.
var configInputs = []bus.Input{
	{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID},
	{Namespace: network.Namespace, Type: network.LinkStatusType},
	{Namespace: network.Namespace, Type: network.PlatformConfigType, ID: network.PlatformConfigID},
}

// source is one snapshot of everything network config derives from.
type source struct {
	net     *configs.NetworkConfig // nil without a config or a network section
	cfg     *configs.Config        // nil without a config
	cmdline Cmdline
	cmdErr  error
	links   []*network.LinkStatus
	nodeID  string
	// platformHostname: Options.PlatformHostname.
	platformHostname string
	// defaultDHCP: Options.DefaultDHCP (metal).
	defaultDHCP bool
	// platform: the PlatformConfig resource (PlatformConfigController's),
	// never nil.
	platform *network.PlatformConfigSpec
}

func readSource(ctx context.Context, r bus.ControllerRuntime, opts *Options) (*source, error) {
	src := &source{nodeID: opts.NodeID, platformHostname: opts.PlatformHostname, defaultDHCP: opts.DefaultDHCP, platform: &network.PlatformConfigSpec{}}

	pc, err := bus.GetAs[*network.PlatformConfig](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.PlatformConfigType, ID: network.PlatformConfigID})

	switch {
	case bus.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read the platform config: %w", err)
	default:
		src.platform = pc.TypedSpec()
	}

	src.cmdline, src.cmdErr = ParseCmdline(opts.KernelCmdline)

	mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})

	switch {
	case bus.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read machine config: %w", err)
	default:
		src.cfg = mc.TypedSpec().Config

		if src.cfg != nil && src.cfg.Machine != nil {
			src.net = src.cfg.Machine.Network
		}
	}

	if src.links, err = bus.ListAs[*network.LinkStatus](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.LinkStatusType}); err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}

	return src, nil
}

// device is a configured interface resolved to a link name.
type device struct {
	name string
	dev  *configs.Device
}

// devices resolves machine.network.interfaces to link names, skipping
// ignored ones. A deviceSelector that matches no link yet is reported
// into is (when not nil) and skipped until a link appears.
func (s *source) devices(is issues) []device {
	if s.net == nil {
		return nil
	}

	var out []device

	for i := range s.net.Interfaces {
		d := &s.net.Interfaces[i]
		if d.Ignore {
			continue
		}

		name := d.Interface
		if name == "" && d.DeviceSelector != nil {
			name = s.match(d.DeviceSelector)
			if name == "" {
				if is != nil {
					is.pending(fmt.Sprintf("link/selector/%d", i), "machine.network.interfaces[%d].deviceSelector matches no link yet", i)
				}

				continue
			}
		}

		if name != "" {
			out = append(out, device{name: name, dev: d})
		}
	}

	return out
}

// ignored reports whether the config says to leave a link alone.
func (s *source) ignored(name string) bool {
	return s.net != nil && slices.ContainsFunc(s.net.Interfaces, func(d configs.Device) bool { return d.Ignore && d.Interface == name })
}

// match finds the first link (by name) a selector fits; every set field
// must match, and fields may be glob patterns.
func (s *source) match(sel *configs.DeviceSelector) string {
	for _, l := range s.links {
		st := l.TypedSpec()
		if st.Type == "loopback" {
			continue
		}

		if globMismatch(sel.HardwareAddr, st.HardwareAddr) || globMismatch(sel.PermanentAddr, st.HardwareAddr) ||
			globMismatch(sel.Driver, st.Driver) {
			continue
		}

		if sel.Physical != nil && *sel.Physical != (st.Kind == "") {
			continue
		}

		if sel.BusPath != "" || sel.PCIID != "" {
			continue // needs sysfs of the link's device; not matched yet
		}

		return l.Metadata().ID
	}

	return ""
}

func globMismatch(pattern, value string) bool {
	if pattern == "" {
		return false
	}

	ok, err := path.Match(strings.ToLower(pattern), strings.ToLower(value))

	return err != nil || !ok
}

// firstEthernet is the link ip= without a device applies to: the first
// physical-looking ethernet link by name.
func (s *source) firstEthernet() string {
	for _, l := range s.links {
		// A physical NIC has no rtnetlink kind (a veth stands in for one in
		// containers): loading the bonding module makes a bond0 that must
		// not win over eth0.
		if st := l.TypedSpec(); st.Type == "ether" && !st.Managed && (st.Kind == "" || st.Kind == "veth") {
			return l.Metadata().ID
		}
	}

	return ""
}

// cmdlineLink is the link ip= configures, or "".
func (s *source) cmdlineLink() string {
	if s.cmdline.LinkName != "" {
		return s.cmdline.LinkName
	}

	return s.firstEthernet()
}

// controlPlane reports whether the config is a control-plane node's, the
// only kind that may hold a shared IP.
func (s *source) controlPlane() bool {
	if s.cfg == nil || s.cfg.Machine == nil {
		return false
	}

	return s.cfg.Machine.Type == "controlplane" || s.cfg.Machine.Type == "init"
}

// defaultDHCPLink is the link default DHCP runs on, or "": the first
// Ethernet link, when DefaultDHCP is on and neither ip= nor the config
// says anything about it. Link or DHCP documents end default DHCP on
// every link, as in Talos.
func (s *source) defaultDHCPLink() string {
	if !s.defaultDHCP || s.cmdline.HasIP || s.documentsConfigureNetwork() {
		return ""
	}

	name := s.firstEthernet()
	if name == "" || s.ignored(name) || s.configures(name) {
		return ""
	}

	return name
}

// configures reports whether the config names link as an interface (it
// then decides about DHCP there).
func (s *source) configures(link string) bool {
	for _, d := range s.devices(nil) {
		if d.name == link {
			return true
		}
	}

	return s.platformConfigures(link)
}

// platformConfigures reports whether the platform's network config gives
// link an address or DHCP: the default DHCP must not run beside it.
func (s *source) platformConfigures(link string) bool {
	for _, a := range s.platform.Addresses {
		if a.LinkName == link {
			return true
		}
	}

	for _, o := range s.platform.Operators {
		if o.LinkName == link {
			return true
		}
	}

	return false
}

// mcConfig is the config a MachineConfig resource holds; nil without one.
func mcConfig(mc *config.MachineConfig) *configs.Config {
	if mc == nil {
		return nil
	}

	return mc.TypedSpec().Config
}
