package network_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// TestDeviceSelector: an interface picked by MAC address, or by driver
// (with the MAC narrowing it to one of two veths), gets the config.
func TestDeviceSelector(t *testing.T) {
	ns := newNS(t)
	ns.veth("ens3", "peer3")
	ns.veth("ens4", "peer4")
	ns.ip("link", "set", "ens3", "address", "02:00:00:00:03:03")
	ns.ip("link", "set", "ens4", "address", "02:00:00:00:04:04")

	nd := startNode(t, ns, nil)

	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{
		{DeviceSelector: &configs.DeviceSelector{HardwareAddr: "02:00:00:00:04:04"}, Addresses: []string{"10.9.40.2/24"}},
	}})
	nd.waitFor(networkres.AddressStatusType, "the address on the link with that MAC", hasIDs(false, "ens4/10.9.40.2/24"))
	nd.waitFor(networkres.AddressStatusType, "nothing on the other link", hasIDs(true, "ens3/10.9.40.2/24"))

	nd.setConfig(&configs.NetworkConfig{Interfaces: []configs.Device{
		{DeviceSelector: &configs.DeviceSelector{Driver: "veth", HardwareAddr: "02:00:00:00:03:*"}, Addresses: []string{"10.9.30.2/24"}},
	}})
	nd.waitFor(networkres.AddressStatusType, "the address on the veth with the matching MAC", hasIDs(false, "ens3/10.9.30.2/24"))
	nd.waitFor(networkres.AddressStatusType, "the previous selection's address gone", hasIDs(true, "ens4/10.9.40.2/24"))
}
