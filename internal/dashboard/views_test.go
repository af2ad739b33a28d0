package dashboard

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

func TestHeaderText(t *testing.T) {
	now := time.Unix(1_000_000, 0)

	full := &Snapshot{
		Hostname:  "api-name",
		Version:   &machine.Version{Version: &machine.VersionInfo{Tag: "v1.2.3"}},
		Stat:      &machine.SystemStat{BootTime: uint64(now.Add(-90 * time.Minute).Unix()), Cpu: make([]*machine.CPUStat, 4)},
		Mem:       &machine.MemInfo{Memtotal: 8 << 20, Memfree: 6 << 20},
		Procs:     make([]ProcRow, 123),
		CPU:       CPUUsage{User: 0.1, System: 0.025, Idle: 0.875},
		HaveCPU:   true,
		Resources: &Resources{Hostname: &network.HostnameStatusSpec{Hostname: "node-1"}},
	}

	for _, tc := range []struct {
		name string
		node string
		snap *Snapshot
		spin int
		want string
	}{
		{
			name: "before data", node: "10.5.0.2",
			want: "10.5.0.2 ...",
		},
		{
			name: "full", node: "10.5.0.2", snap: full, spin: 1,
			want: "┘ node-1 talosbox (v1.2.3): uptime 1h30m0s, 4x CPU, 8.0 GiB RAM, PROCS 123, CPU 12.5%, RAM 25.0%",
		},
		{
			name: "cheap only, failing", node: "", spin: 4,
			snap: &Snapshot{Err: errors.Join(errors.New("memory: [denied]"), errors.New("load average: x"))},
			want: "┐ (local) talosbox (n/a): uptime n/a, n/a, n/a RAM, PROCS n/a, CPU n/a, RAM n/a × memory: [denied]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := visible(t, headerText(tc.node, tc.snap, tc.spin, now), 200); got != tc.want {
				t.Errorf("header:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestFooterText(t *testing.T) {
	screens := []string{"Summary", "Monitor", "Network Config"}

	for _, tc := range []struct {
		name   string
		nodes  []string
		sel    int
		screen int
		paused bool
		width  int
		want   string
	}{
		{
			name: "all fit", nodes: []string{"10.5.0.2", "10.5.0.3"}, sel: 1, screen: 1, width: 120,
			want: "[10.5.0.2 | 10.5.0.3] --- [F1: Summary] --- [Monitor] --- [F3: Network Config]",
		},
		{
			name: "endpoint", nodes: []string{""}, width: 120, paused: true,
			want: "[(local)] --- [Summary] --- [F2: Monitor] --- [F3: Network Config] --- [PAUSED]",
		},
		{
			// 52 columns for the screens, 7 around the nodes: 21 left.
			name: "windowed", nodes: []string{"node-1", "node-2", "node-3", "node-4"}, sel: 2, width: 80,
			want: "[‹ node-3 | node-4] --- [Summary] --- [F2: Monitor] --- [F3: Network Config]",
		},
		{
			name: "one cut", nodes: []string{"a-very-long-node-name", "b"}, width: 80,
			want: "[a-very-long-node-n… ›] --- [Summary] --- [F2: Monitor] --- [F3: Network Config]",
		},
		{
			name: "tag-like names", nodes: []string{"[red]"}, width: 80,
			want: "[[red]] --- [Summary] --- [F2: Monitor] --- [F3: Network Config]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := footerText(tc.nodes, tc.sel, screens, tc.screen, tc.paused, tc.width)
			if got := visible(t, text, tc.width); got != tc.want {
				t.Errorf("footer:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestSummaryFields(t *testing.T) {
	var ms runtime.MachineStatusSpec
	ms.Stage = "booting"
	ms.Status.UnmetConditions = []runtime.UnmetCondition{{Name: "nodeReady"}, {Name: "services"}}

	s := &Snapshot{
		Version: &machine.Version{Platform: &machine.PlatformInfo{Name: "metal", Mode: "metal"}},
		Services: []*machine.ServiceInfo{
			{Id: "kubelet", State: "Running", Health: &machine.ServiceHealth{Healthy: true}},
			{Id: "etcd", State: "Preparing", Health: &machine.ServiceHealth{Unknown: true}},
		},
	}
	r := &Resources{
		MachineStatus: &ms,
		MachineType:   "worker",
		SecureBoot:    new(bool),
		Members:       []string{"node-1"},
		Addresses:     []netip.Prefix{netip.MustParsePrefix("10.5.0.3/24"), netip.MustParsePrefix("10.5.0.2/24")},
		NetStatus:     &network.NetworkStatusSpec{ConnectivityReady: true},
		Resolvers:     &network.ResolverStatusSpec{},
		KubeletImage:  "ghcr.io/siderolabs/kubelet:v1.34.1",
	}

	check := func(fields []field, want map[string]string) {
		t.Helper()

		got := map[string]string{}
		for _, f := range fields {
			got[f.Name] = visible(t, f.Value, 80)
		}

		if len(got) != len(want) {
			t.Errorf("fields %v, want %v", got, want)
		}

		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
	}

	check(talosFields(s, r), map[string]string{
		"UUID": "n/a", "CLUSTER": "1 machine", "TYPE": "worker", "PLATFORM": "metal",
		"STAGE": "Booting", "READY": "× False (nodeReady, services)", "SECUREBOOT": "× False",
	})

	// A worker has no control-plane pods.
	check(kubernetesFields(s, r), map[string]string{"KUBERNETES": "v1.34.1", "KUBELET": "√ Healthy", "ETCD": "Preparing"})

	check(networkFields(s, r), map[string]string{
		"HOST": "n/a", "IP": "10.5.0.2/24, 10.5.0.3/24", "GW": "n/a", "CONNECTIVITY": "√ OK", "DNS": "<none>", "NTP": "n/a",
	})

	r.MachineType = "controlplane"
	if f := kubernetesFields(s, r); len(f) != 6 || visible(t, f[3].Value, 80) != "n/a" {
		t.Errorf("control plane fields: %v", f)
	}
}

func TestNetworkText(t *testing.T) {
	s := &Snapshot{
		Hostname: "node-1",
		Links:    map[string]Rate{"eth0": {Rx: 2000, Tx: 100}, "lo": {}},
		Resources: &Resources{
			Hostname: &network.HostnameStatusSpec{Hostname: "node-1", Domainname: "example.org"},
			Links: []Link{{Name: "eth0", LinkStatusSpec: network.LinkStatusSpec{
				Type: "ether", MTU: 1500, HardwareAddr: "aa:bb:cc:dd:ee:ff", OperationalState: "up",
			}}},
			LinkAddrs: []network.AddressStatusSpec{{LinkName: "eth0", Address: netip.MustParsePrefix("10.5.0.2/24")}},
			Routes: []network.RouteStatusSpec{
				{Family: "inet4", Gateway: netip.MustParseAddr("10.5.0.1"), OutLinkName: "eth0", Table: network.TableMain, Priority: 1024},
				{Family: "inet4", Destination: netip.MustParsePrefix("10.5.0.2/32"), Table: network.TableLocal},
			},
			TimeServers: &network.TimeServerStatusSpec{NTPServers: []string{"time.cloudflare.com"}},
		},
	}

	want := `HOSTNAME  node-1.example.org
GATEWAY   10.5.0.1
DNS       n/a
NTP       time.cloudflare.com

LINKS
NAME  KIND   STATE  MTU   HW ADDR            RX        TX       ADDRESSES
eth0  ether  up     1500  aa:bb:cc:dd:ee:ff  2.0 kB/s  100 B/s  10.5.0.2/24
lo    -      -      -     -                  0 B/s     0 B/s    -

ROUTES
DESTINATION  GATEWAY   LINK  TABLE  METRIC
default      10.5.0.1  eth0  main   1024
`

	if got := networkText(s); got != want {
		t.Errorf("network text:\n%s\nwant\n%s", got, want)
	}

	if got := networkText(&Snapshot{}); !strings.Contains(got, "LINKS\nn/a\n") || !strings.Contains(got, "ROUTES\nn/a\n") {
		t.Errorf("network text without data:\n%s", got)
	}
}
