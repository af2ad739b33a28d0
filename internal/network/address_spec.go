package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// AddressSpecController applies AddressSpecs. It remembers the addresses
// it added (on the controller, so a restart after an error keeps the
// memory) and only ever removes those: an address someone else put on a
// link is never touched, even when it matches a spec. An owned address
// removed behind its back is put back on the next netlink event.
type AddressSpecController struct {
	opts *Options

	mu    sync.Mutex
	owned map[string]netip.Prefix // AddressID -> address, added by us
}

// NewAddressSpecController makes the controller.
func NewAddressSpecController(opts *Options) *AddressSpecController {
	return &AddressSpecController{opts: opts, owned: map[string]netip.Prefix{}}
}

func (c *AddressSpecController) Name() string { return "network.AddressSpecController" }

func (c *AddressSpecController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.AddressSpecType}}
}

func (c *AddressSpecController) Outputs() []bus.Output { return []bus.Output{issueOutput} }

func (c *AddressSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return runApply(ctx, r, c.opts.NetNSPath, watchAddrs|watchLinks, c.Name(), func(ctx context.Context, k *kernel) (issues, error) {
		return c.reconcile(ctx, r, k)
	})
}

func (c *AddressSpecController) reconcile(ctx context.Context, r bus.ControllerRuntime, k *kernel) (issues, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	specs, err := bus.ListAs[*network.AddressSpec](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.AddressSpecType})
	if err != nil {
		return nil, err
	}

	have, err := kernelAddresses(k)
	if err != nil {
		return nil, err
	}

	is := issues{}
	wanted := map[string]bool{}
	byIP := map[netip.Addr]string{} // first spec (by ID) claiming an IP

	for _, res := range specs {
		spec := res.TypedSpec()
		id := spec.ID()
		wanted[id] = true

		if prev, ok := byIP[spec.Address.Addr()]; ok {
			is.fail("address/"+id, fmt.Errorf("address %s conflicts with %s: one IP cannot be configured on two links", id, prev))
			continue
		}

		byIP[spec.Address.Addr()] = id

		if _, ok := have[id]; ok {
			continue
		}

		if err := c.checkForeign(id, spec, have); err != nil {
			is.fail("address/"+id, err)
			continue
		}

		if err := c.add(k, spec); err != nil {
			if errors.Is(err, errLinkMissing) {
				is.pending("address/"+id, "%v", err)
			} else {
				is.fail("address/"+id, err)
			}

			continue
		}

		c.owned[id] = spec.Address
	}

	for id, p := range c.owned {
		if wanted[id] {
			continue
		}

		if st, ok := have[id]; ok {
			if err := k.h.AddrDel(linkByIndex(st.LinkIndex, st.LinkName), &netlink.Addr{IPNet: ipNet(p)}); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
				is.fail("address/"+id, fmt.Errorf("remove address %s: %w", id, err))
				continue
			}
		}

		delete(c.owned, id)
	}

	return is, nil
}

// checkForeign refuses an address whose IP is already on another link
// under someone else's management.
func (c *AddressSpecController) checkForeign(id string, spec *network.AddressSpecSpec, have map[string]network.AddressStatusSpec) error {
	for hid, st := range have {
		if st.Address.Addr() == spec.Address.Addr() && hid != id {
			if _, ours := c.owned[hid]; !ours {
				return fmt.Errorf("address %s conflicts with %s already in the kernel (not managed by networkd)", id, hid)
			}
		}
	}

	return nil
}

func (c *AddressSpecController) add(k *kernel, spec *network.AddressSpecSpec) error {
	link, err := k.h.LinkByName(spec.LinkName)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return fmt.Errorf("%w: waiting for link %s to appear", errLinkMissing, spec.LinkName)
		}

		return fmt.Errorf("look up link %s: %w", spec.LinkName, err)
	}

	if err := k.h.AddrAdd(link, &netlink.Addr{IPNet: ipNet(spec.Address)}); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add address %s to %s: %w", spec.Address, spec.LinkName, err)
	}

	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// linkByIndex is enough of a Link for calls that only need its index.
func linkByIndex(idx int, name string) netlink.Link {
	attrs := netlink.NewLinkAttrs()
	attrs.Index, attrs.Name = idx, name

	return &netlink.Device{LinkAttrs: attrs}
}
