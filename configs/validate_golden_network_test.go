package configs_test

import "testing"

// TestValidateGoldenNetwork covers machine.network rules.
func TestValidateGoldenNetwork(t *testing.T) {
	t.Parallel()

	runValidateCases(t, []validateCase{
		{
			name:     "VIP on a worker",
			base:     "worker",
			patch:    `machine: {network: {interfaces: [{interface: eth0, dhcp: true, vip: {ip: 10.0.0.100}}]}}`,
			wantErrs: []string{`machine.network.interfaces[0].vip: virtual (shared) IP is not allowed on non-controlplane nodes`},
		},
		{
			name:     "VIP address invalid",
			patch:    `machine: {network: {interfaces: [{interface: eth0, dhcp: true, vlans: [{vlanId: 10, vip: {ip: 10.0.0.300}}]}]}}`,
			wantErrs: []string{`machine.network.interfaces[0].vlans[0].vip.ip: invalid VIP address "10.0.0.300"`},
		},
		{
			name: "interface in two bonds",
			patch: `machine: {network: {interfaces: [
				{interface: bond0, dhcp: true, bond: {mode: active-backup, interfaces: [eth0, eth1]}},
				{interface: bond1, dhcp: true, bond: {mode: active-backup, interfaces: [eth0, eth2]}}]}}`,
			wantErrs: []string{`machine.network.interfaces[1].bond.interfaces[0]: interface "eth0" is declared as part of two separate links`},
		},
		{
			name: "interface in a bond and a bridge",
			patch: `machine: {network: {interfaces: [
				{interface: bond0, bond: {interfaces: [eth0]}},
				{interface: br0, bridge: {interfaces: [eth0]}}]}}`,
			wantErrs: []string{`machine.network.interfaces[1].bridge.interfaces[0]: interface "eth0" is declared as part of two separate links`},
		},
		{
			name: "bond member with its own address",
			patch: `machine: {network: {interfaces: [
				{interface: bond0, dhcp: true, bond: {interfaces: [eth0, eth1]}},
				{interface: eth0, addresses: [10.0.0.5/24]}]}}`,
			wantErrs: []string{`machine.network.interfaces[1]: interface "eth0" is a member of "bond0" and cannot have addressing of its own`},
		},
		{
			name:     "bridge port to an undeclared bridge",
			patch:    `machine: {network: {interfaces: [{interface: eth0, bridgePort: {master: br9}}]}}`,
			wantErrs: []string{`machine.network.interfaces[0].bridgePort.master: bridge "br9" is not declared`},
		},
		{
			name:     "invalid legacy cidr",
			patch:    `machine: {network: {interfaces: [{interface: eth0, dhcp: true}, {interface: eth1, cidr: 10.0.0/8}]}}`,
			wantErrs: []string{`machine.network.interfaces[1].cidr: invalid CIDR "10.0.0/8"`},
		},
		{
			// Talos takes a bare address as a host prefix (/32, /128).
			name: "addresses without prefix length",
			patch: `machine: {network: {interfaces: [{interface: eth0, addresses: [10.0.0.5, "2001:db8::5"],
				vlans: [{vlanId: 5, cidr: 10.0.5.5}]}]}}`,
		},
		{
			// Talos refuses both, on a link and on a VLAN.
			name: "cidr and addresses together",
			patch: `machine: {network: {interfaces: [{interface: eth0, cidr: 10.0.0.5/24, addresses: [10.0.1.5/24],
				vlans: [{vlanId: 5, cidr: 10.0.5.5/24, addresses: [10.0.6.5/24]}]}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0].cidr: interface can't have both .cidr and .addresses set: list 10.0.0.5/24 in addresses instead`,
				`machine.network.interfaces[0].vlans[0].cidr: vlan can't have both .cidr and .addresses set: list 10.0.5.5/24 in addresses instead`,
			},
		},
		{
			name: "bare address that is not one",
			patch: `machine: {network: {interfaces: [{interface: eth0, addresses: [10.0.0.256, "fe80::1%eth0"],
				vlans: [{vlanId: 5, addresses: [eth0]}]}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0].addresses[0]: invalid address "10.0.0.256": want an IP address, with its prefix length (192.168.1.10/24)`,
				`machine.network.interfaces[0].addresses[1]: invalid address "fe80::1%eth0": want an IP address, with its prefix length (192.168.1.10/24)`,
				`machine.network.interfaces[0].vlans[0].addresses[0]: invalid address "eth0": want an IP address, with its prefix length (192.168.1.10/24)`,
			},
		},
		{
			name: "bad routes",
			patch: `machine: {network: {interfaces: [{interface: eth0, dhcp: true, routes: [
				{network: 0.0.0.0/0, gateway: 10.0.0.256},
				{network: "::/0", gateway: 10.0.0.1},
				{metric: 10},
				{network: 10.1.0.0/16, gateway: 10.0.0.1, source: bad, mtu: 20}]}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0].routes[0].gateway: invalid gateway address "10.0.0.256"`,
				`machine.network.interfaces[0].routes[1].gateway: gateway 10.0.0.1 and network ::/0 are of different address families`,
				`machine.network.interfaces[0].routes[2]: route needs a network, a gateway or both`,
				`machine.network.interfaces[0].routes[3].source: invalid source address "bad"`,
				`machine.network.interfaces[0].routes[3].mtu: invalid MTU 20: must be between 68 and 65535`,
			},
		},
		{
			name:  "bad host settings",
			patch: `machine: {network: {hostname: "-bad-", nameservers: [dns.example.com], searchDomains: ["a..b"], extraHostEntries: [{ip: 10.0.0.1}]}}`,
			wantErrs: []string{
				`machine.network.hostname: invalid hostname "-bad-": its label "-bad-" may only hold letters, digits and '-', and must not start or end with '-'`,
				`machine.network.nameservers[0]: invalid nameserver address "dns.example.com"`,
				`machine.network.searchDomains[0]: invalid search domain "a..b": it has an empty label (two dots in a row, or a leading dot)`,
				`machine.network.extraHostEntries[0].aliases: at least one alias is required`,
			},
		},
		{
			name: "interface naming",
			patch: `machine: {network: {interfaces: [
				{interface: eth0, deviceSelector: {driver: virtio_net}, dhcp: true},
				{dhcp: true},
				{deviceSelector: {}, dhcp: true},
				{deviceSelector: {hardwareAddr: "zz:00"}, dhcp: true}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0]: interface and deviceSelector are mutually exclusive`,
				`machine.network.interfaces[1]: either interface or deviceSelector is required`,
				`machine.network.interfaces[2].deviceSelector: deviceSelector must match on at least one property`,
				`machine.network.interfaces[3].deviceSelector.hardwareAddr: invalid MAC address "zz:00"`,
			},
		},
		{
			name: "bond settings",
			patch: `machine: {network: {interfaces: [{interface: bond0, dhcp: true, bond: {
				interfaces: [eth0, eth1], mode: fast, lacpRate: quick, xmitHashPolicy: layer9, miimon: 100, updelay: 150, downdelay: 200}}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0].bond.mode: unsupported bond mode "fast" (expected one of balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb)`,
				`machine.network.interfaces[0].bond.lacpRate: unsupported LACP rate "quick" (expected one of slow, fast)`,
				`machine.network.interfaces[0].bond.xmitHashPolicy: unsupported transmit hash policy "layer9" (expected one of layer2, layer3+4, layer2+3, encap2+3, encap3+4, vlan+srcmac)`,
				`machine.network.interfaces[0].bond.updelay: bond.upDelay should be a multiple of miiMon`,
			},
		},
		{
			// Talos's checkBond: options of other modes are refused.
			name: "bond options of another mode",
			patch: `machine: {network: {interfaces: [
				{interface: bond0, dhcp: true, bond: {interfaces: [eth0], mode: active-backup, lacpRate: fast, adActorSysPrio: 5, adUserPortKey: 3, tlbDynamicLb: 1, packetsPerSlave: 2}},
				{interface: bond1, dhcp: true, bond: {interfaces: [eth1], mode: 802.3ad, arpValidate: all, arpInterval: 100, primary: eth1}},
				{interface: bond2, dhcp: true, bond: {interfaces: [eth2], primary: eth2}}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0].bond.lacpRate: bond.lacpRate is not available in active-backup mode (only in 802.3ad)`,
				`machine.network.interfaces[0].bond.adActorSysPrio: bond.adActorSysPrio is not available in active-backup mode (only in 802.3ad)`,
				`machine.network.interfaces[0].bond.adUserPortKey: bond.adUserPortKey is not available in active-backup mode (only in 802.3ad)`,
				`machine.network.interfaces[0].bond.packetsPerSlave: bond.packetsPerSlave is not available in active-backup mode (only in balance-rr)`,
				`machine.network.interfaces[0].bond.tlbDynamicLb: bond.tlbDynamicLb is not available in active-backup mode (only in balance-tlb and balance-alb)`,
				`machine.network.interfaces[1].bond.arpValidate: bond.arpValidate is not available in 802.3ad mode (only in balance-rr, active-backup, balance-xor and broadcast)`,
				`machine.network.interfaces[1].bond.arpInterval: bond.arpInterval is not available in 802.3ad mode (only in balance-rr, active-backup, balance-xor and broadcast)`,
				`machine.network.interfaces[1].bond.primary: bond.primary is not available in 802.3ad mode (only in active-backup, balance-tlb and balance-alb)`,
				`machine.network.interfaces[2].bond.primary: bond.primary is not available in balance-rr mode (only in active-backup, balance-tlb and balance-alb)`,
			},
			wantWarns: []string{
				`machine.network.interfaces[0].bond: talosbox does not apply packetsPerSlave, tlbDynamicLb, adActorSysPrio, adUserPortKey to the bond yet: the bonding driver's defaults hold`,
				`machine.network.interfaces[1].bond: talosbox does not apply arpValidate, primary, arpInterval to the bond yet: the bonding driver's defaults hold`,
				`machine.network.interfaces[2].bond: talosbox does not apply primary to the bond yet: the bonding driver's defaults hold`,
			},
		},
		{
			name: "bond option values, and what Talos does not support",
			patch: `machine: {network: {interfaces: [{interface: bond0, dhcp: true, bond: {interfaces: [eth0], mode: active-backup,
				arpValidate: some, arpAllTargets: every, primaryReselect: never, failOverMac: swap, adSelect: best,
				arpIPTarget: [10.0.0.1], adActorSystem: "00:11:22:33:44:55"}}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0].bond.arpValidate: unsupported ARP validation "some" (expected one of none, active, backup, all, filter, filter-active, filter-backup)`,
				`machine.network.interfaces[0].bond.arpAllTargets: unsupported ARP all targets mode "every" (expected one of any, all)`,
				`machine.network.interfaces[0].bond.primaryReselect: unsupported primary reselection policy "never" (expected one of always, better, failure)`,
				`machine.network.interfaces[0].bond.failOverMac: unsupported fail over MAC policy "swap" (expected one of none, active, follow)`,
				`machine.network.interfaces[0].bond.adSelect: unsupported 802.3ad aggregation selection "best" (expected one of stable, bandwidth, count)`,
				`machine.network.interfaces[0].bond.arpIPTarget: bond.arpIPTarget is not supported`,
				`machine.network.interfaces[0].bond.adActorSystem: bond.adActorSystem is not supported`,
			},
			wantWarns: []string{
				`machine.network.interfaces[0].bond: talosbox does not apply arpValidate, arpAllTargets, primaryReselect, failOverMac, adSelect to the bond yet: the bonding driver's defaults hold`,
			},
		},
		{
			name:     "bond without members",
			patch:    `machine: {network: {interfaces: [{interface: bond0, dhcp: true, bond: {mode: 802.3ad}}]}}`,
			wantErrs: []string{`machine.network.interfaces[0].bond: bond requires interfaces or deviceSelectors`},
		},
		{
			name:     "link of two kinds",
			patch:    `machine: {network: {interfaces: [{interface: x0, dummy: true, bridge: {}}]}}`,
			wantErrs: []string{`machine.network.interfaces[0]: a link can only be one of bond, bridge, dummy or wireguard (found bridge, dummy)`},
		},
		{
			name:  "VLAN IDs",
			patch: `machine: {network: {interfaces: [{interface: eth0, vlans: [{vlanId: 5000, dhcp: true}, {vlanId: 10, dhcp: true}, {vlanId: 10, dhcp: true}, {dhcp: true}]}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0].vlans[0].vlanId: invalid VLAN ID 5000: must be between 1 and 4094`,
				`machine.network.interfaces[0].vlans[2].vlanId: VLAN ID 10 is declared twice on this link`,
				`machine.network.interfaces[0].vlans[3].vlanId: invalid VLAN ID 0: must be between 1 and 4094`,
			},
		},
		{
			name: "duplicate interface entries that disagree",
			patch: `machine: {network: {interfaces: [
				{interface: eth0, mtu: 1500, vlans: [{vlanId: 7, dhcp: true}]},
				{interface: eth0, mtu: 9000, vlans: [{vlanId: 7, dhcp: true}]},
				{interface: br0, bridge: {}},
				{interface: br0, dummy: true}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[3]: interface "br0" is declared more than once with link settings (bond, bridge, dummy or wireguard)`,
				`machine.network.interfaces[1].mtu: interface "eth0" is declared more than once with different MTUs (1500 and 9000)`,
				`machine.network.interfaces[1].vlans[0].vlanId: VLAN ID 7 is declared twice on interface "eth0"`,
			},
		},
		{
			name:  "duplicate interface entries that agree are merged",
			patch: `machine: {network: {interfaces: [{interface: lo0, cidr: 192.168.0.21/24}, {interface: lo0, cidr: 10.2.2.2/24}]}}`,
		},
		{
			name: "duplicate device selectors that disagree",
			patch: `machine: {network: {interfaces: [
				{deviceSelector: {driver: virtio_net, hardwareAddr: "00:00:*"}, mtu: 1500, vlans: [{vlanId: 7, dhcp: true}]},
				{deviceSelector: {hardwareAddr: "00:00:*", driver: virtio_net}, mtu: 9000, vlans: [{vlanId: 7, dhcp: true}]},
				{deviceSelector: {busPath: "0000:00:03.0", physical: true}, dummy: true},
				{deviceSelector: {physical: true, busPath: "0000:00:03.0"}, bond: {interfaces: [eth5], mode: active-backup}}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[3]: deviceSelector {busPath: "0000:00:03.0", physical: true} is declared more than once with link settings (bond, bridge, dummy or wireguard)`,
				`machine.network.interfaces[1].mtu: deviceSelector {hardwareAddr: "00:00:*", driver: "virtio_net"} is declared more than once with different MTUs (1500 and 9000)`,
				`machine.network.interfaces[1].vlans[0].vlanId: VLAN ID 7 is declared twice on deviceSelector {hardwareAddr: "00:00:*", driver: "virtio_net"}`,
			},
		},
		{
			name: "device selectors that differ or agree",
			patch: `machine: {network: {interfaces: [
				{deviceSelector: {driver: virtio_net, physical: true}, mtu: 1500},
				{deviceSelector: {driver: virtio_net, physical: false}, mtu: 9000},
				{deviceSelector: {driver: virtio_net}, addresses: [10.0.0.2/24]},
				{deviceSelector: {driver: virtio_net}, addresses: [10.0.0.3/24]}]}}`,
		},
		{
			name: "wireguard as printed in the guide",
			patch: `machine: {network: {interfaces: [{interface: wg0, cidr: 192.168.2.1/24, wireguard: {privateKey: "<privatekey file contents>", listenPort: 51820,
				peers: [{allowedIPs: [192.168.88.0/24], endpoint: 209.202.254.14.8172, publicKey: ABCDEF...}]}}]}}`,
			wantErrs: []string{
				`machine.network.interfaces[0].wireguard.privateKey: invalid wireguard private key: must be base64 of 32 bytes`,
				`machine.network.interfaces[0].wireguard.peers[0].publicKey: invalid wireguard public key: must be base64 of 32 bytes`,
				`machine.network.interfaces[0].wireguard.peers[0].endpoint: invalid wireguard peer endpoint "209.202.254.14.8172": expected host:port`,
			},
		},
	})
}
