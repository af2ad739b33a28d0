package network

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TestWatchOutlivesUserSenders: a message a process sends to rtnetlink's
// link group reaches every subscriber with that process's port id, not
// the kernel's. It changes nothing, so the watch stays up and quiet (it
// used to fail, restarting every network controller), and the next real
// change still wakes it.
func TestWatchOutlivesUserSenders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root for network namespaces; CI runs as root")
	}

	name := "tbnwk-" + rand.Text()[:8]
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}

	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() }) //nolint:errcheck // best effort

	k, err := openKernel("/run/netns/" + name)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(k.Close)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	woke := make(chan struct{}, 1)

	errc, err := k.watch(ctx, watchLinks, func() {
		select {
		case woke <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	sendToLinkGroup(t, k.ns)

	// A real change after it: the subscription reads its socket in order,
	// so by the time the change wakes the watch, the other message has
	// been read and judged.
	if out, err := exec.Command("ip", "-n", name, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1").CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v: %s", err, out)
	}

	select {
	case <-woke:
	case err := <-errc:
		t.Fatalf("the watch failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no wake after a link was added")
	}

	select {
	case err := <-errc:
		t.Fatalf("the watch failed on another process's message: %v", err)
	default:
	}
}

// sendToLinkGroup sends, from a socket of this process in ns, an
// RTM_GETLINK request to the kernel that is also multicast to the link
// group (as root may), as a routing daemon's message would be.
func sendToLinkGroup(t *testing.T, ns netns.NsHandle) {
	t.Helper()

	fd := socketIn(t, ns)
	defer unix.Close(fd)

	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}

	msg := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.RTM_GETLINK)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	// ifi_index (at 4 in the ifinfomsg): one no link has.
	binary.NativeEndian.PutUint32(msg[unix.SizeofNlMsghdr+4:], 0x7ffffff0)

	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_LINK}); err != nil {
		t.Fatalf("send to the link group: %v", err)
	}
}

// socketIn opens a route netlink socket inside ns.
func socketIn(t *testing.T, ns netns.NsHandle) int {
	t.Helper()

	type result struct {
		fd  int
		err error
	}

	done := make(chan result, 1)

	go func() {
		// The thread that entered ns is not given back to the runtime:
		// it exits with the goroutine.
		runtime.LockOSThread()

		if err := netns.Set(ns); err != nil {
			done <- result{-1, err}
			return
		}

		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		done <- result{fd, err}
	}()

	r := <-done
	if r.err != nil {
		t.Fatal(errors.Join(errors.New("route netlink socket in the test namespace"), r.err))
	}

	return r.fd
}
