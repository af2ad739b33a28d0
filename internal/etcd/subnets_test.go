package etcd

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}

	return out
}

func TestSelectAddresses(t *testing.T) {
	t.Parallel()

	node := addrs("10.5.0.2", "192.168.1.10", "172.20.0.5")
	dual := addrs("10.5.0.2", "fd00::2")

	for _, tc := range []struct {
		name                 string
		node                 []netip.Addr
		advertised, listen   []string
		wantAdv              []netip.Addr
		wantPeer, wantClient []netip.Addr
		wantErr              string
	}{
		{
			name:       "defaults: first address, listen everywhere",
			node:       node,
			wantAdv:    addrs("10.5.0.2"),
			wantPeer:   addrs("0.0.0.0"),
			wantClient: addrs("0.0.0.0"),
		},
		{
			name:       "IPv6 anywhere listens on [::]",
			node:       dual,
			wantAdv:    addrs("10.5.0.2"),
			wantPeer:   addrs("::"),
			wantClient: addrs("::"),
		},
		{
			name:       "advertised subnet picks every match",
			node:       node,
			advertised: []string{"192.168.0.0/16", "172.16.0.0/12"},
			wantAdv:    addrs("192.168.1.10", "172.20.0.5"),
			wantPeer:   addrs("0.0.0.0"),
			wantClient: addrs("0.0.0.0"),
		},
		{
			name:       "negation only excludes",
			node:       node,
			advertised: []string{"!10.0.0.0/8"},
			wantAdv:    addrs("192.168.1.10", "172.20.0.5"),
			wantPeer:   addrs("0.0.0.0"),
			wantClient: addrs("0.0.0.0"),
		},
		{
			name:       "negation narrows an inclusion; a bare IP excludes a VIP",
			node:       node,
			advertised: []string{"0.0.0.0/0", "!192.168.1.10"},
			wantAdv:    addrs("10.5.0.2", "172.20.0.5"),
			wantPeer:   addrs("0.0.0.0"),
			wantClient: addrs("0.0.0.0"),
		},
		{
			name:       "listen subnets bind the matches, clients also on loopback",
			node:       node,
			advertised: []string{"10.5.0.0/24"},
			listen:     []string{"10.5.0.0/24"},
			wantAdv:    addrs("10.5.0.2"),
			wantPeer:   addrs("10.5.0.2"),
			wantClient: addrs("127.0.0.1", "10.5.0.2"),
		},
		{
			name:       "IPv6 listen subnet uses ::1",
			node:       dual,
			advertised: []string{"fd00::/8"},
			listen:     []string{"fd00::/8"},
			wantAdv:    addrs("fd00::2"),
			wantPeer:   addrs("fd00::2"),
			wantClient: addrs("::1", "fd00::2"),
		},
		{name: "no match for advertised", node: node, advertised: []string{"10.99.0.0/16"}, wantErr: "no node address matches advertisedSubnets"},
		{name: "no match for listen", node: node, listen: []string{"!0.0.0.0/0"}, wantErr: "no node address matches listenSubnets"},
		{name: "bad subnet", node: node, advertised: []string{"10.0.0.0/33"}, wantErr: `subnet "10.0.0.0/33"`},
		{name: "not an address", node: node, listen: []string{"eth0"}, wantErr: `subnet "eth0": not a CIDR or IP address`},
		{name: "no addresses", wantErr: "the node has no addresses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectAddresses(tc.node, tc.advertised, tc.listen)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if !slices.Equal(got.Advertised, tc.wantAdv) || !slices.Equal(got.ListenPeer, tc.wantPeer) || !slices.Equal(got.ListenClient, tc.wantClient) {
				t.Fatalf("got %+v, want advertised %v peer %v client %v", got, tc.wantAdv, tc.wantPeer, tc.wantClient)
			}
		})
	}
}

func TestURLs(t *testing.T) {
	t.Parallel()

	got := URLs(addrs("10.5.0.2", "fd00::2", "::ffff:10.0.0.1"), ClientPort)
	want := []string{"https://10.5.0.2:2379", "https://[fd00::2]:2379", "https://10.0.0.1:2379"}

	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
