package network

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// kernel is one controller's connection to the network namespace it
// manages. Every socket is opened inside that namespace up front, so the
// controller's goroutines may run on any OS thread.
type kernel struct {
	ns netns.NsHandle
	h  *netlink.Handle
	// own: the process's own namespace, used without setns(2), which
	// needs CAP_SYS_ADMIN that a Docker node does not have.
	own bool
}

// openKernel opens the namespace at path (the process's own when empty).
func openKernel(path string) (*kernel, error) {
	if path == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("open netlink: %w", err)
		}

		return &kernel{ns: netns.None(), h: h, own: true}, nil
	}

	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", path, err)
	}

	// Route netlink only: asking for every family (the default) also opens
	// XFRM and netfilter sockets, which fail with "protocol not supported"
	// on a kernel that has them as modules not loaded, and a node has no
	// modprobe to load them. Found booting the Debian cloud kernel.
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close() //nolint:errcheck // already failing

		return nil, fmt.Errorf("open netlink in %s: %w", path, err)
	}

	return &kernel{ns: ns, h: h}, nil
}

func (k *kernel) Close() {
	k.h.Close()

	if !k.own {
		k.ns.Close() //nolint:errcheck // nothing to do about it
	}
}

// nsOption is the namespace for netlink subscriptions: nil (the calling
// thread's) for the process's own.
func (k *kernel) nsOption() *netns.NsHandle {
	if k.own {
		return nil
	}

	return &k.ns
}

// inNS runs fn on an OS thread switched into the namespace, for the calls
// that have no namespace parameter (ethtool ioctls, wgctrl). If the
// thread cannot be switched back it is not returned to the scheduler and
// dies with the goroutine.
func (k *kernel) inNS(fn func() error) error {
	if k.own {
		return fn()
	}

	errc := make(chan error, 1)

	go func() {
		runtime.LockOSThread()

		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("get current network namespace: %w", err)
			return
		}
		defer orig.Close() //nolint:errcheck

		if err := netns.Set(k.ns); err != nil {
			errc <- fmt.Errorf("enter network namespace: %w", err)
			return
		}

		err = fn()

		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}

		errc <- err
	}()

	return <-errc
}

// Kernel event groups a controller may watch.
const (
	watchLinks = 1 << iota
	watchAddrs
	watchRoutes
)

// watch subscribes to rtnetlink changes in the namespace and calls wake
// on each. The returned channel yields an error when a subscription
// breaks (for instance on a socket overrun), so the controller can fail
// and be restarted with a fresh view; it is closed when ctx ends.
func (k *kernel) watch(ctx context.Context, groups int, wake func()) (<-chan error, error) {
	done := make(chan struct{})
	errc := make(chan error, 3)
	onErr := func(err error) {
		// A message that another process sent to the groups reaches every
		// subscriber; the library skips it, since only the kernel reports
		// changes, and says so here. The subscription is whole: failing
		// the controller for it restarted every network controller
		// whenever some process on the node sent one.
		if strings.HasPrefix(err.Error(), "Wrong sender portid") {
			return
		}

		select {
		case errc <- fmt.Errorf("netlink subscription: %w", err):
		default:
		}
	}

	links := make(chan netlink.LinkUpdate, 64)
	addrs := make(chan netlink.AddrUpdate, 64)
	routes := make(chan netlink.RouteUpdate, 64)

	if groups&watchLinks != 0 {
		if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{Namespace: k.nsOption(), ErrorCallback: onErr}); err != nil {
			close(done)
			return nil, fmt.Errorf("subscribe to link changes: %w", err)
		}
	}

	if groups&watchAddrs != 0 {
		if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: k.nsOption(), ErrorCallback: onErr}); err != nil {
			close(done)
			return nil, fmt.Errorf("subscribe to address changes: %w", err)
		}
	}

	if groups&watchRoutes != 0 {
		if err := netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{Namespace: k.nsOption(), ErrorCallback: onErr}); err != nil {
			close(done)
			return nil, fmt.Errorf("subscribe to route changes: %w", err)
		}
	}

	go func() {
		defer close(done)

		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-links:
				if !ok {
					onErr(errors.New("link updates closed"))
					links = nil
				}
			case _, ok := <-addrs:
				if !ok {
					onErr(errors.New("address updates closed"))
					addrs = nil
				}
			case _, ok := <-routes:
				if !ok {
					onErr(errors.New("route updates closed"))
					routes = nil
				}
			}

			wake()
		}
	}()

	return errc, nil
}

// retryDump repeats a netlink dump the kernel interrupted because the
// table changed under it; the partial answer is never used.
func retryDump[T any](fn func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)

	for range 5 {
		v, err = fn()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}

	return v, err
}

// inNetNSPath runs fn on a thread inside the namespace at path (the
// process's own when empty).
func inNetNSPath(path string, fn func() error) error {
	k, err := openKernel(path)
	if err != nil {
		return err
	}
	defer k.Close()

	return k.inNS(fn)
}
