package configs

import (
	"slices"
	"strings"
)

// The values of the bond options, as the kernel's bonding driver and
// Talos's nethelpers name them.
var (
	bondModes        = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}
	lacpRates        = []string{"slow", "fast"}
	hashModes        = []string{"layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"}
	arpValidates     = []string{"none", "active", "backup", "all", "filter", "filter-active", "filter-backup"}
	arpAllTargets    = []string{"any", "all"}
	primaryReselects = []string{"always", "better", "failure"}
	failOverMACs     = []string{"none", "active", "follow"}
	adSelects        = []string{"stable", "bandwidth", "count"}
)

// bond checks a bond's options as Talos's checkBond does: known values,
// and options the bonding driver only takes in some modes refused in the
// others (the kernel refuses them when the bond is created, and the link
// would not come up).
func (v *validator) bond(p string, b *Bond) {
	switch {
	case len(b.Interfaces) == 0 && len(b.DeviceSelectors) == 0:
		v.errorf(p, "bond requires interfaces or deviceSelectors")
	case len(b.Interfaces) > 0 && len(b.DeviceSelectors) > 0:
		v.errorf(p, "bond interfaces and deviceSelectors are mutually exclusive")
	}

	for i := range b.DeviceSelectors {
		v.deviceSelector(indexPath(p+".deviceSelectors", i), &b.DeviceSelectors[i])
	}

	v.oneOf(p+".mode", "bond mode", b.Mode, bondModes)
	v.oneOf(p+".lacpRate", "LACP rate", b.LACPRate, lacpRates)
	v.oneOf(p+".xmitHashPolicy", "transmit hash policy", b.HashPolicy, hashModes)
	v.oneOf(p+".arpValidate", "ARP validation", b.ARPValidate, arpValidates)
	v.oneOf(p+".arpAllTargets", "ARP all targets mode", b.ARPAllTargets, arpAllTargets)
	v.oneOf(p+".primaryReselect", "primary reselection policy", b.PrimaryReselect, primaryReselects)
	v.oneOf(p+".failOverMac", "fail over MAC policy", b.FailOverMac, failOverMACs)
	v.oneOf(p+".adSelect", "802.3ad aggregation selection", b.ADSelect, adSelects)

	if b.UpDelay > 0 && (b.MIIMon == 0 || b.UpDelay%b.MIIMon != 0) {
		v.errorf(p+".updelay", "bond.upDelay should be a multiple of miiMon")
	}

	if b.DownDelay > 0 && (b.MIIMon == 0 || b.DownDelay%b.MIIMon != 0) {
		v.errorf(p+".downdelay", "bond.downDelay should be a multiple of miiMon")
	}

	// Talos refuses both: it never passes them to the kernel.
	if len(b.ARPIPTarget) > 0 {
		v.errorf(p+".arpIPTarget", "bond.arpIPTarget is not supported")
	}

	if b.ADActorSystem != "" {
		v.errorf(p+".adActorSystem", "bond.adActorSystem is not supported")
	}

	v.bondModeOptions(p, b)
	v.bondUnapplied(p, b)
}

// bondModeOptions refuses options of other modes than the bond's (Talos's
// rules; the mode defaults to balance-rr). An unknown mode is reported
// alone.
func (v *validator) bondModeOptions(p string, b *Bond) {
	mode := b.Mode
	if mode == "" {
		mode = "balance-rr"
	}

	if !slices.Contains(bondModes, mode) {
		return
	}

	lacp := mode == "802.3ad"
	tlb := mode == "balance-tlb" || mode == "balance-alb"

	for _, r := range []struct {
		field string
		set   bool
		ok    bool
		modes string
	}{
		{"lacpRate", b.LACPRate != "", lacp, "802.3ad"},
		{"adActorSysPrio", b.ADActorSysPrio > 0, lacp, "802.3ad"},
		{"adUserPortKey", b.ADUserPortKey > 0, lacp, "802.3ad"},
		{"arpValidate", b.ARPValidate != "", !lacp && !tlb, "balance-rr, active-backup, balance-xor and broadcast"},
		{"arpInterval", b.ARPInterval > 0, !lacp && !tlb, "balance-rr, active-backup, balance-xor and broadcast"},
		{"primary", b.Primary != "", mode == "active-backup" || tlb, "active-backup, balance-tlb and balance-alb"},
		{"packetsPerSlave", b.PacketsPerSlave > 1, mode == "balance-rr", "balance-rr"},
		{"tlbDynamicLb", b.TLBDynamicLB > 0, tlb, "balance-tlb and balance-alb"},
	} {
		if r.set && !r.ok {
			v.errorf(p+"."+r.field, "bond.%s is not available in %s mode (only in %s)", r.field, mode, r.modes)
		}
	}
}

// bondUnapplied warns of the options the node does not pass to the kernel
// yet (internal/network's bond spec carries mode, xmitHashPolicy,
// lacpRate, miimon, updelay, downdelay and minLinks): the link comes up
// with the driver's defaults for them.
func (v *validator) bondUnapplied(p string, b *Bond) {
	var names []string

	for _, o := range []struct {
		name string
		set  bool
	}{
		{"arpValidate", b.ARPValidate != ""}, {"arpAllTargets", b.ARPAllTargets != ""}, {"primary", b.Primary != ""},
		{"primaryReselect", b.PrimaryReselect != ""}, {"failOverMac", b.FailOverMac != ""}, {"adSelect", b.ADSelect != ""},
		{"arpInterval", b.ARPInterval > 0}, {"resendIgmp", b.ResendIGMP > 0}, {"lpInterval", b.LPInterval > 0},
		{"packetsPerSlave", b.PacketsPerSlave > 0}, {"numPeerNotif", b.NumPeerNotif > 0}, {"tlbDynamicLb", b.TLBDynamicLB > 0},
		{"allSlavesActive", b.AllSlavesActive > 0}, {"useCarrier", b.UseCarrier != nil}, {"adActorSysPrio", b.ADActorSysPrio > 0},
		{"adUserPortKey", b.ADUserPortKey > 0}, {"peerNotifyDelay", b.PeerNotifyDelay > 0},
	} {
		if o.set {
			names = append(names, o.name)
		}
	}

	if len(names) > 0 {
		v.warnf(p, "talosbox does not apply %s to the bond yet: the bonding driver's defaults hold", strings.Join(names, ", "))
	}
}
