package mgmt

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// genlFamily asks the kernel's generic netlink controller for a family
// by name: nil when it exists, ENOENT when not. It is a single request,
// written out here because talosctl keeps the netlink libraries out of
// its import graph (they are the node's).
func genlFamily(name string) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		return fmt.Errorf("open a generic netlink socket: %w", err)
	}
	defer unix.Close(fd) //nolint:errcheck // read-only use

	// The controller always answers; the timeout only bounds a kernel
	// that misbehaves.
	tv := unix.NsecToTimeval((5 * time.Second).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("generic netlink socket: %w", err)
	}

	kernel := &unix.SockaddrNetlink{Family: unix.AF_NETLINK}
	if err := unix.Sendto(fd, getFamilyRequest(name), 0, kernel); err != nil {
		return fmt.Errorf("ask for generic netlink family %q: %w", name, err)
	}

	buf := make([]byte, 16<<10) // the family's description, with its ops and groups
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("read the generic netlink controller's answer: %w", err)
		}

		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("parse the generic netlink controller's answer: %w", err)
		}

		for _, m := range msgs {
			switch m.Header.Type {
			case unix.GENL_ID_CTRL:
				return nil // the family's description: it exists
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return fmt.Errorf("short netlink error from the generic netlink controller (%d bytes)", len(m.Data))
				}

				if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
					return syscall.Errno(-errno)
				}

				return nil
			}
		}
	}
}

// getFamilyRequest is CTRL_CMD_GETFAMILY with CTRL_ATTR_FAMILY_NAME.
func getFamilyRequest(name string) []byte {
	attr := unix.NLA_HDRLEN + len(name) + 1 // NUL-terminated
	msg := make([]byte, unix.NLMSG_HDRLEN+unix.GENL_HDRLEN+nlaAlign(attr))

	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.GENL_ID_CTRL)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(msg[8:], 1) // sequence number; port 0 lets the kernel assign ours

	g := msg[unix.NLMSG_HDRLEN:]
	g[0], g[1] = unix.CTRL_CMD_GETFAMILY, 1 // command, version

	a := g[unix.GENL_HDRLEN:]
	binary.NativeEndian.PutUint16(a[0:], uint16(attr))
	binary.NativeEndian.PutUint16(a[2:], unix.CTRL_ATTR_FAMILY_NAME)
	copy(a[unix.NLA_HDRLEN:], name)

	return msg
}

func nlaAlign(n int) int { return (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }
