package network_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/internal/network"
)

func TestParseCmdline(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want network.Cmdline
	}{
		{"quiet", network.Cmdline{}},
		{"ip=dhcp", network.Cmdline{HasIP: true, DHCP: true}},
		{
			"console=ttyS0 ip=10.0.0.5:10.0.0.9:10.0.0.1:255.255.255.0:node-a:eth1:off:1.1.1.1:9.9.9.9:ntp.example.org",
			network.Cmdline{
				HasIP: true, Address: netip.MustParsePrefix("10.0.0.5/24"), Gateway: netip.MustParseAddr("10.0.0.1"),
				Hostname: "node-a", LinkName: "eth1",
				DNSServers: []netip.Addr{netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("9.9.9.9")}, NTPServers: []string{"ntp.example.org"},
			},
		},
		{"ip=172.20.0.2::172.20.0.1:::::", network.Cmdline{HasIP: true, Address: netip.MustParsePrefix("172.20.0.2/16"), Gateway: netip.MustParseAddr("172.20.0.1")}},
		{"ip=[2001:db8::5]::[2001:db8::1]:64::eth0:dhcp", network.Cmdline{
			HasIP: true, Address: netip.MustParsePrefix("2001:db8::5/64"), Gateway: netip.MustParseAddr("2001:db8::1"), LinkName: "eth0", DHCP: true,
		}},
		{"ip=10.0.0.5::::cmd::: talos.hostname=wins", network.Cmdline{HasIP: true, Address: netip.MustParsePrefix("10.0.0.5/8"), Hostname: "wins", HostnameSet: true}},
	} {
		got, err := network.ParseCmdline(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}

		if got.Address != tc.want.Address || got.Gateway != tc.want.Gateway || got.Hostname != tc.want.Hostname ||
			got.LinkName != tc.want.LinkName || got.DHCP != tc.want.DHCP || got.HasIP != tc.want.HasIP ||
			!slices.Equal(got.DNSServers, tc.want.DNSServers) || !slices.Equal(got.NTPServers, tc.want.NTPServers) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}

	for _, bad := range []string{"ip=10.0.0.300", "ip=10.0.0.5:::255.0.255.0", "ip=10.0.0.5::nope"} {
		if _, err := network.ParseCmdline(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestDefaultHostname(t *testing.T) {
	a, b := network.DefaultHostname("node-a"), network.DefaultHostname("node-b")
	if a == b || len(a) != len("talos-xxx-yyy") || a != network.DefaultHostname("node-a") {
		t.Errorf("DefaultHostname: %q, %q", a, b)
	}
}

func FuzzParseCmdline(f *testing.F) {
	f.Add("ip=10.0.0.5:10.0.0.9:10.0.0.1:255.255.255.0:node-a:eth1:off:1.1.1.1:9.9.9.9:ntp")
	f.Add("ip=[2001:db8::5]::[2001:db8::1]:64::eth0:dhcp")
	f.Fuzz(func(_ *testing.T, s string) {
		network.ParseCmdline(s) //nolint:errcheck // must not panic
	})
}
