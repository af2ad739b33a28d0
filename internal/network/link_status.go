package network

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// LinkStatusController mirrors the namespace's links into LinkStatuses and
// keeps them current from a netlink subscription.
type LinkStatusController struct {
	opts *Options
	// drivers caches ethtool answers by ifindex+name: a driver never
	// changes under a link, and asking takes a thread switch.
	drivers map[string]string
}

// NewLinkStatusController makes the controller.
func NewLinkStatusController(opts *Options) *LinkStatusController {
	return &LinkStatusController{opts: opts, drivers: map[string]string{}}
}

func (c *LinkStatusController) Name() string { return "network.LinkStatusController" }

func (c *LinkStatusController) Inputs() []bus.Input { return nil }

func (c *LinkStatusController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.LinkStatusType}}
}

func (c *LinkStatusController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return runWithKernel(ctx, r, c.opts.NetNSPath, watchLinks, func(ctx context.Context, k *kernel) error {
		return c.reconcile(ctx, r, k)
	})
}

func (c *LinkStatusController) reconcile(ctx context.Context, r bus.ControllerRuntime, k *kernel) error {
	links, err := retryDump(k.h.LinkList)
	if err != nil {
		return fmt.Errorf("list links: %w", err)
	}

	want := make(map[string]network.LinkStatusSpec, len(links))

	for _, l := range links {
		a := l.Attrs()
		want[a.Name] = network.LinkStatusSpec{
			Index:            a.Index,
			Type:             a.EncapType,
			Kind:             linkKind(l),
			Driver:           c.driver(k, a),
			HardwareAddr:     a.HardwareAddr.String(),
			MTU:              a.MTU,
			Up:               a.Flags&net.FlagUp != 0,
			LinkState:        a.RawFlags&unix.IFF_LOWER_UP != 0,
			OperationalState: a.OperState.String(),
			MasterIndex:      a.MasterIndex,
			ParentIndex:      a.ParentIndex,
			Alias:            a.Alias,
			Managed:          a.Alias == LinkAlias,
		}
	}

	return syncOutputs(ctx, r, c.Name(), network.Namespace, network.LinkStatusType, want)
}

// linkKind is the rtnetlink kind, empty for a plain NIC.
func linkKind(l netlink.Link) string {
	if t := l.Type(); t != "device" {
		return t
	}

	return ""
}

func (c *LinkStatusController) driver(k *kernel, a *netlink.LinkAttrs) string {
	key := fmt.Sprintf("%d/%s", a.Index, a.Name)
	if d, ok := c.drivers[key]; ok {
		return d
	}

	var drv string

	// The ioctl needs a socket inside the namespace; a link without a
	// driver (lo) answers an error, which leaves it empty.
	_ = k.inNS(func() error { //nolint:errcheck // no driver is an answer too
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd) //nolint:errcheck

		info, err := unix.IoctlGetEthtoolDrvinfo(fd, a.Name)
		if err != nil {
			return err
		}

		drv = unix.ByteSliceToString(info.Driver[:])

		return nil
	})

	c.drivers[key] = drv

	return drv
}
