package machine

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"

	"github.com/vishvananda/netlink"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/hostdns"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// HostDNSServiceID is the node's DNS forwarder (machine.features.hostDNS).
const HostDNSServiceID = "hostdns"

// hostDNSService relays DNS from hostdns.Address to the node's resolvers,
// on nodes that own their network (metal, a Docker node's PID 1): the
// address goes on the loopback link, where pods reach it through their
// default route to the node.
func (n *Node) hostDNSService(cfg *configs.Config) (supervisor.Service, bool) {
	if on, _ := configs.HostDNSEnabled(cfg); !on || !n.opts.Platform.OwnRoot {
		return supervisor.Service{}, false
	}

	resolv := filepath.Join(n.opts.Platform.Root, "etc/resolv.conf")

	return supervisor.Service{
		ID: HostDNSServiceID,
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, w io.Writer) error {
			if err := addLoopbackAddress(hostdns.Address); err != nil {
				return err
			}

			fmt.Fprintf(w, "forwarding DNS on %s:53 to the resolvers in %s\n", hostdns.Address, resolv)

			return hostdns.Serve(ctx, hostdns.Options{
				Upstreams: func() []netip.AddrPort { return hostdns.ResolvConf(resolv, hostdns.Address) },
			})
		}),
	}, true
}

func addLoopbackAddress(a netip.Addr) error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("host dns: %w", err)
	}

	addr, err := netlink.ParseAddr(netip.PrefixFrom(a, a.BitLen()).String())
	if err != nil {
		return err
	}

	if err := netlink.AddrReplace(lo, addr); err != nil {
		return fmt.Errorf("host dns: address %s on lo: %w", a, err)
	}

	return nil
}
