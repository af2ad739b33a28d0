package network_test

import (
	"testing"

	"github.com/talosbox/talosbox/internal/bus"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// TestHardwareAddrFirst: in a namespace with no physical NIC (as a
// container), the first Ethernet link by name gives HardwareAddresses/first
// its MAC, as the kernel has it; removing that link moves it to the next.
func TestHardwareAddrFirst(t *testing.T) {
	ns := newNS(t)
	ns.veth("aaa0", "zpeer0")
	ns.veth("eth1", "peer1")

	nd := startNode(t, ns, nil)
	h := ns.handle()

	wantFirst := func(name string) {
		t.Helper()

		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}

		mac := l.Attrs().HardwareAddr.String()

		nd.waitFor(networkres.HardwareAddrType, "first = "+name+" "+mac, func(items []bus.Resource) bool {
			if len(items) != 1 || items[0].Metadata().ID != networkres.HardwareAddrFirst {
				return false
			}

			s := items[0].(*networkres.HardwareAddr).TypedSpec()

			return s.Name == name && s.HardwareAddr == mac
		})
	}

	wantFirst("aaa0")

	ns.ip("link", "del", "aaa0")
	wantFirst("eth1")
}
