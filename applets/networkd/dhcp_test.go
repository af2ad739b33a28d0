package networkd_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/applet/applettest"
)

// The DHCP server's side of the test link, and the lease it keeps for the
// client's MAC.
const (
	dhcpMAC    = "02:00:5e:00:53:77"
	dhcpServer = "10.77.0.1"
	dhcpLease  = "10.77.0.50/24"
)

// newDHCPNS makes a namespace like newNS whose eth0 has dnsmasq on the
// other end: peer0 moves into a second namespace of its own, so that the
// lease travels over the veth rather than being routed locally.
func newDHCPNS(t *testing.T) string {
	t.Helper()

	if _, err := exec.LookPath("dnsmasq"); err != nil {
		t.Fatal("needs dnsmasq (Debian package dnsmasq-base; scripts/install-deps.sh installs it)")
	}

	ns, srv := newNS(t), addNS(t)

	ipOut(t, ns, "link", "set", "eth0", "address", dhcpMAC)
	ipOut(t, ns, "link", "set", "peer0", "netns", srv)
	ipOut(t, srv, "addr", "add", dhcpServer+"/24", "dev", "peer0")
	ipOut(t, srv, "link", "set", "peer0", "up")

	server := applettest.Start(t, exec.Command("ip", "netns", "exec", srv, "dnsmasq",
		"--no-daemon", "--conf-file=/dev/null", "--port=0", "--user=root",
		"--interface=peer0", "--bind-interfaces", "--dhcp-authoritative",
		"--no-ping", // offer at once rather than ping the address first
		"--dhcp-range=10.77.0.40,10.77.0.60,2m",
		"--dhcp-option=option:router,"+dhcpServer,
		"--dhcp-host="+dhcpMAC+","+strings.TrimSuffix(dhcpLease, "/24"),
		"--dhcp-leasefile="+filepath.Join(t.TempDir(), "leases"),
		"--log-facility=-"))
	server.WaitLine("DHCP, sockets bound", 10*time.Second)

	return ns
}

const dhcpNetwork = `    interfaces:
      - interface: eth0
        dhcp: true
`

// networkd alone wires the DHCPv4 operator as machined does: the lease's
// address and default route land on the link.
func TestDHCPLeaseOnLink(t *testing.T) {
	ns := newDHCPNS(t)
	cfg := writeConfig(t, t.TempDir(), dhcpNetwork)

	nd := applettest.Start(t, networkdCmd(ns, "--config", cfg))
	nd.WaitLine("address=true", 30*time.Second)

	if out := ipOut(t, ns, "addr", "show", "dev", "eth0"); !strings.Contains(out, "inet "+dhcpLease) {
		t.Errorf("eth0 has no lease address %s:\n%s", dhcpLease, out)
	}

	if out := ipOut(t, ns, "route", "show", "default"); !strings.Contains(out, "via "+dhcpServer+" dev eth0 proto 116") {
		t.Errorf("default route from the lease: %q", out)
	}

	if code := nd.Stop(10 * time.Second); code != 0 {
		t.Errorf("networkd exited %d after SIGTERM", code)
	}
}

// --once waits for the lease before it judges the result.
func TestOnceWaitsForLease(t *testing.T) {
	ns := newDHCPNS(t)
	cfg := writeConfig(t, t.TempDir(), dhcpNetwork)

	nd := applettest.Start(t, networkdCmd(ns, "--config", cfg, "--once", "--timeout", "30s"))

	if code := nd.Wait(40 * time.Second); code != 0 {
		t.Fatalf("networkd --once exited %d", code)
	}

	if out := nd.Output(); !strings.Contains(out, "address=true") || !strings.Contains(out, "issues=0") {
		t.Errorf("status after --once: %s", out)
	}
}
