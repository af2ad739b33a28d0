// Command baseline is the least a Go /init does before a node can answer
// on the network: mount /proc, /sys and /dev, load the virtio modules the
// initramfs carries, take a DHCP lease on eth0 and listen on TCP port
// 50000. scripts/bench-metal.sh (boot/metaltest's BenchmarkMetalBoot)
// boots it on the same kernel and QEMU command line as talosbox to show
// what talosbox costs on top.
//
// It uses the same module loader (internal/kmod) and DHCP client
// (internal/dhcp) as talosbox, so the comparison measures talosbox's
// structure, not different libraries. As PID 1 it never exits: on error
// it prints BASELINE-FAIL and powers off.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/dhcp"
	"github.com/talosbox/talosbox/internal/kmod"
)

// Markers on the console.
const (
	markReady = "BASELINE-READY"
	markFail  = "BASELINE-FAIL"
)

func main() {
	start := time.Now()

	if err := run(); err != nil {
		fmt.Printf("%s: %v\n", markFail, err)
		unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF) //nolint:errcheck // nothing left to do
	}

	fmt.Printf("%s in %s\n", markReady, time.Since(start).Round(time.Millisecond))

	for {
		time.Sleep(time.Hour) // PID 1 never exits
	}
}

func run() error {
	for _, m := range []struct{ target, fstype string }{{"/proc", "proc"}, {"/sys", "sysfs"}, {"/dev", "devtmpfs"}} {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return err
		}

		if err := unix.Mount(m.fstype, m.target, m.fstype, 0, ""); err != nil {
			return fmt.Errorf("mount %s: %w", m.target, err)
		}
	}

	mods := []configs.KernelModule{{Name: "virtio_pci"}, {Name: "virtio_blk"}, {Name: "virtio_net"}, {Name: "virtio_rng"}}
	if err := kmod.Load(mods, kmod.Options{}); err != nil {
		return err
	}

	if err := lease("eth0"); err != nil {
		return err
	}

	l, err := net.Listen("tcp", ":50000")
	if err != nil {
		return err
	}

	go serve(l)

	return nil
}

// lease brings link up and configures the first DHCP lease on it; the
// client keeps running to hold it.
func lease(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}

	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s up: %w", name, err)
	}

	c, err := dhcp.New(dhcp.Options{Interface: name})
	if err != nil {
		return err
	}

	events := make(chan dhcp.Event)

	go c.Run(context.Background(), events) //nolint:errcheck // reported through the events

	for ev := range events {
		if ev.Kind != dhcp.Acquired {
			continue
		}

		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ev.Lease.Address.Addr().AsSlice(), Mask: net.CIDRMask(ev.Lease.Address.Bits(), 32)}}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("%s address %s: %w", name, ev.Lease.Address, err)
		}

		go func() {
			for range events { //nolint:revive // keep the client's sends from blocking
			}
		}()

		return nil
	}

	return nil
}

// serve answers every connection with one line.
func serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}

		fmt.Fprintln(c, "baseline")
		c.Close()
	}
}
