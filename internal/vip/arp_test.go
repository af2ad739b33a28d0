package vip_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/packet"

	"github.com/talosbox/talosbox/internal/testnet"
	"github.com/talosbox/talosbox/internal/vip"
)

func TestGratuitousARPFrame(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0x42, 0x0a, 0x05, 0x00, 0x02}
	ip := netip.MustParseAddr("10.5.0.100")

	for _, tc := range []struct {
		name    string
		mac     net.HardwareAddr
		ip      netip.Addr
		wantErr string
	}{
		{name: "ipv4", mac: mac, ip: ip},
		{name: "ipv6", mac: mac, ip: netip.MustParseAddr("fd00::1"), wantErr: "not IPv4"},
		{name: "no mac", mac: nil, ip: ip, wantErr: "not an Ethernet address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frame, err := vip.GratuitousARP(tc.mac, tc.ip)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			gotMAC, gotIP, err := vip.ParseGratuitousARP(frame)
			if err != nil {
				t.Fatal(err)
			}

			if gotMAC.String() != tc.mac.String() || gotIP != tc.ip {
				t.Fatalf("parsed %s %s, want %s %s", gotMAC, gotIP, tc.mac, tc.ip)
			}

			if net.HardwareAddr(frame[0:6]).String() != "ff:ff:ff:ff:ff:ff" {
				t.Fatalf("destination %s, want broadcast", net.HardwareAddr(frame[0:6]))
			}
		})
	}

	// A request for another address is not gratuitous.
	frame, _ := vip.GratuitousARP(mac, ip)
	copy(frame[14+24:], []byte{10, 5, 0, 9})

	if _, _, err := vip.ParseGratuitousARP(frame); err == nil {
		t.Fatal("an ordinary ARP request parsed as gratuitous")
	}
}

// TestAnnounceOnTheWire sends the announcement from a host namespace and
// catches it on the bridge of the segment, as a switch would see it.
func TestAnnounceOnTheWire(t *testing.T) {
	nw := testnet.New(t, 1)
	host := nw.Hosts[0]
	ip := netip.MustParseAddr("10.5.0.100")

	var hostMAC net.HardwareAddr

	if err := testnet.InNS(host.NS, func() error {
		ifi, err := net.InterfaceByName("eth0")
		hostMAC = ifi.HardwareAddr

		return err
	}); err != nil {
		t.Fatal(err)
	}

	got := make(chan error, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	listening := make(chan struct{})

	go func() {
		got <- testnet.InNS(nw.Hub, func() error {
			br, err := net.InterfaceByName("br0")
			if err != nil {
				return err
			}

			conn, err := packet.Listen(br, packet.Raw, 0x0806, nil)
			if err != nil {
				return err
			}
			defer conn.Close()

			close(listening)

			deadline, _ := ctx.Deadline()
			if err := conn.SetReadDeadline(deadline); err != nil {
				return err
			}

			buf := make([]byte, 1500)

			for {
				n, _, err := conn.ReadFrom(buf)
				if err != nil {
					return err
				}

				mac, sender, err := vip.ParseGratuitousARP(buf[:n])
				if err != nil {
					continue // other ARP traffic
				}

				if sender != ip || mac.String() != hostMAC.String() {
					return errors.New("announcement for " + sender.String() + " from " + mac.String())
				}

				return nil
			}
		})
	}()

	select {
	case <-listening:
	case err := <-got:
		t.Fatalf("capture: %v", err)
	}

	if err := testnet.InNS(host.NS, func() error { return vip.Announce("eth0", ip) }); err != nil {
		t.Fatal(err)
	}

	if err := <-got; err != nil {
		t.Fatalf("capture: %v", err)
	}

	if err := testnet.InNS(host.NS, func() error { return vip.Announce("nosuchlink", ip) }); err == nil {
		t.Fatal("announce on a missing link succeeded")
	}
}
