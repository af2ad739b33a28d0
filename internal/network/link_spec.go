package network

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// LinkAlias marks links networkd created (IFLA_IFALIAS), so it removes
// only those when their spec goes away, even after a restart.
const LinkAlias = "talosbox"

// retryInterval is how soon a controller with unresolved issues tries
// again without being woken: kernel and bus events cover most retries,
// this covers refusals no event will undo.
const retryInterval = 5 * time.Second

// LinkSpecController applies LinkSpecs: creates logical links (dummy,
// bond, bridge, VLAN, WireGuard), enslaves bond and bridge members, sets
// MAC address, MTU and multicast and brings links up (or down, when the
// config says so); it deletes logical links it created whose spec is
// gone. Links it did not create are never deleted.
type LinkSpecController struct{ opts *Options }

// NewLinkSpecController makes the controller.
func NewLinkSpecController(opts *Options) *LinkSpecController { return &LinkSpecController{opts: opts} }

func (c *LinkSpecController) Name() string { return "network.LinkSpecController" }

func (c *LinkSpecController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.LinkSpecType}}
}

func (c *LinkSpecController) Outputs() []bus.Output { return []bus.Output{issueOutput} }

func (c *LinkSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return runApply(ctx, r, c.opts.NetNSPath, watchLinks, c.Name(), func(ctx context.Context, k *kernel) (issues, error) {
		return c.reconcile(ctx, r, k)
	})
}

// rank orders link work so that what a link depends on exists first:
// plain links, then bonds and bridges, their members, and VLANs on top.
func rank(s *network.LinkSpecSpec) int {
	switch {
	case s.Kind == network.KindBond || s.Kind == network.KindBridge:
		return 1
	case s.BondMaster != "" || s.BridgeMaster != "":
		return 2
	case s.Kind == network.KindVLAN:
		return 3
	}

	return 0
}

func (c *LinkSpecController) reconcile(ctx context.Context, r bus.ControllerRuntime, k *kernel) (issues, error) {
	specs, err := bus.ListAs[*network.LinkSpec](ctx, r, bus.Kind{Namespace: network.Namespace, Type: network.LinkSpecType})
	if err != nil {
		return nil, err
	}

	slices.SortStableFunc(specs, func(a, b *network.LinkSpec) int { return cmp.Compare(rank(a.TypedSpec()), rank(b.TypedSpec())) })

	is := issues{}
	wanted := map[string]bool{}

	for _, res := range specs {
		spec := res.TypedSpec()
		wanted[spec.Name] = true

		if err := c.apply(k, spec); err != nil {
			if errors.Is(err, errLinkMissing) {
				is.pending("link/"+spec.Name, "%v", err)
			} else {
				is.fail("link/"+spec.Name, err)
			}
		}
	}

	links, err := retryDump(k.h.LinkList)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}

	for _, l := range links {
		if a := l.Attrs(); a.Alias == LinkAlias && !wanted[a.Name] {
			if err := k.h.LinkDel(l); err != nil {
				is.fail("link/"+a.Name, fmt.Errorf("delete link %s: %w", a.Name, err))
			}
		}
	}

	return is, nil
}

var errLinkMissing = errors.New("link not found")

func (c *LinkSpecController) apply(k *kernel, spec *network.LinkSpecSpec) error {
	link, err := k.h.LinkByName(spec.Name)

	var notFound netlink.LinkNotFoundError

	switch {
	case errors.As(err, &notFound) && spec.Logical:
		if link, err = createLink(k, spec); err != nil {
			return err
		}
	case errors.As(err, &notFound):
		return fmt.Errorf("%w: waiting for link %s to appear", errLinkMissing, spec.Name)
	case err != nil:
		return fmt.Errorf("look up link %s: %w", spec.Name, err)
	}

	if spec.Logical {
		if err := updateLogical(k, link, spec); err != nil {
			return err
		}
	}

	for _, m := range []struct {
		master, kind string
	}{{spec.BondMaster, "bond"}, {spec.BridgeMaster, "bridge"}} {
		if m.master == "" {
			continue
		}

		if err := enslave(k, link, m.master, m.kind); err != nil {
			return err
		}

		// Joining may have taken the member down; read it again.
		if link, err = k.h.LinkByName(spec.Name); err != nil {
			return fmt.Errorf("look up link %s: %w", spec.Name, err)
		}
	}

	if spec.BondMaster == "" && spec.BridgeMaster == "" && link.Attrs().MasterIndex != 0 {
		if err := release(k, link); err != nil {
			return err
		}
	}

	return c.settings(k, link, spec)
}

// release takes link out of the bond or bridge networkd made that it is
// a member of, now that its spec names none. A master networkd did not
// make (a CNI's bridge) keeps its members.
func release(k *kernel, link netlink.Link) error {
	m, err := k.h.LinkByIndex(link.Attrs().MasterIndex)
	if err != nil || m.Attrs().Alias != LinkAlias {
		return nil //nolint:nilerr // a master that is gone or not ours is left alone
	}

	if err := k.h.LinkSetNoMaster(link); err != nil {
		return fmt.Errorf("release %s from %s: %w", link.Attrs().Name, m.Attrs().Name, err)
	}

	return nil
}

// settings brings what every link has in line with the spec: MAC
// address, MTU, multicast and up or down.
func (c *LinkSpecController) settings(k *kernel, link netlink.Link, spec *network.LinkSpecSpec) error {
	a := link.Attrs()

	if spec.HardwareAddr != "" && !strings.EqualFold(a.HardwareAddr.String(), spec.HardwareAddr) {
		hw, err := net.ParseMAC(spec.HardwareAddr)
		if err != nil {
			return fmt.Errorf("link %s: hardware address: %w", spec.Name, err)
		}

		if err := k.h.LinkSetHardwareAddr(link, hw); err != nil {
			return fmt.Errorf("set hardware address %s on link %s: %w", hw, spec.Name, err)
		}
	}

	if spec.MTU != 0 && a.MTU != int(spec.MTU) {
		if err := k.h.LinkSetMTU(link, int(spec.MTU)); err != nil {
			return fmt.Errorf("set MTU %d on link %s: %w (the kernel keeps MTU %d)", spec.MTU, spec.Name, err, a.MTU)
		}
	}

	if m := spec.Multicast; m != nil && *m != (a.Flags&net.FlagMulticast != 0) {
		set, word := k.h.LinkSetMulticastOff, "off"
		if *m {
			set, word = k.h.LinkSetMulticastOn, "on"
		}

		if err := set(link); err != nil {
			return fmt.Errorf("turn multicast %s on link %s: %w", word, spec.Name, err)
		}
	}

	switch up := a.Flags&net.FlagUp != 0; {
	case spec.Up && !up:
		if err := k.h.LinkSetUp(link); err != nil {
			return fmt.Errorf("set link %s up: %w", spec.Name, err)
		}
	case !spec.Up && up:
		// The config says the link is down (a link document's up: false).
		if err := k.h.LinkSetDown(link); err != nil {
			return fmt.Errorf("set link %s down: %w", spec.Name, err)
		}
	}

	return nil
}

// enslave makes link a member of the bond or bridge master; the bonding
// driver wants members down while they join.
func enslave(k *kernel, link netlink.Link, master, kind string) error {
	m, err := k.h.LinkByName(master)
	if err != nil {
		return fmt.Errorf("%w: %s %s for member %s: %v", errLinkMissing, kind, master, link.Attrs().Name, err)
	}

	if link.Attrs().MasterIndex == m.Attrs().Index {
		return nil
	}

	if kind == "bond" {
		if err := k.h.LinkSetDown(link); err != nil {
			return fmt.Errorf("set %s down to join bond %s: %w", link.Attrs().Name, master, err)
		}
	}

	if err := k.h.LinkSetMasterByIndex(link, m.Attrs().Index); err != nil {
		return fmt.Errorf("add %s to %s %s: %w", link.Attrs().Name, kind, master, err)
	}

	return nil
}
