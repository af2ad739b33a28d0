package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/internal/platform"
)

// MinDiskMiB fits Talos's partition layout (internal/disk) with room for
// EPHEMERAL.
const MinDiskMiB = 4400

// Request describes a cluster to create.
type Request struct {
	// Name names the cluster and its state directory.
	Name string
	// CIDR is the segment's IPv4 network; the host takes its first
	// address (the gateway) on the tap.
	CIDR netip.Prefix
	// Kernel and Initrd are what every node boots.
	Kernel, Initrd string
	// ISO, when set, is what every node boots instead, from its CD-ROM
	// (an ISO of talosbox imager iso --platform nocloud: each node gets a
	// NoCloud seed with its address and name, iso.go); Kernel, Initrd and
	// Cmdline are then not used.
	ISO string
	// DiskImage, when set, is every node's disk instead: an image of
	// talosbox imager metal --platform nocloud (raw, or .zst), expanded
	// into the node's disk and grown to DiskMiB; the nodes boot from it
	// and get their NoCloud seeds as with ISO.
	DiskImage string
	// UEFI boots the nodes on OVMF instead of SeaBIOS.
	UEFI bool
	// BuildInitrd, when Initrd is empty, writes the initramfs to path,
	// a file in the cluster's state directory.
	BuildInitrd func(path string) error
	// Cmdline is added to every node's kernel command line.
	Cmdline []string
	// Nodes are started in this order.
	Nodes []NodeRequest
	// ServeCache, when set, is the command line of an image cache server
	// (talosctl image cache-serve of make images' output, without
	// --address): it is started detached on CacheMirror(CIDR) before the
	// nodes and stopped by Destroy. Without it the nodes have nothing to
	// pull Kubernetes from and run no kubelet.
	ServeCache []string
	// Launcher, when set, is the command line of the node launcher
	// (talosctl cluster qemu-launch, without --dir): each node's QEMU runs
	// under one, which starts it again after a guest reboot, from the
	// disk once the install made it bootable. Without it QEMU runs
	// detached and reboots in place, always from the kernel.
	Launcher []string
}

// NodeRequest describes one virtual machine.
type NodeRequest struct {
	// Name is the node's hostname (set with ip=) and its directory.
	Name string
	// Type is "controlplane" or "worker", recorded for Show.
	Type string
	// IP is the node's static address on the segment.
	IP        netip.Addr
	CPUs      int
	MemoryMiB int
	// DiskMiB is the size of the node's sparse raw disk (/dev/vda).
	DiskMiB int64
}

var nameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`)

// Gateway is the host's address on a segment: the network's first.
func Gateway(cidr netip.Prefix) netip.Addr { return cidr.Masked().Addr().Next() }

func (r *Request) validate() error {
	if !nameRe.MatchString(r.Name) {
		return fmt.Errorf("cluster name %q: want lowercase letters, digits, '-' and '.'", r.Name)
	}

	if !r.CIDR.IsValid() || !r.CIDR.Addr().Is4() || r.CIDR != r.CIDR.Masked() || r.CIDR.Bits() > 29 {
		return fmt.Errorf("subnet %s: want an IPv4 network address of at most /29, such as 10.5.0.0/24", r.CIDR)
	}

	switch {
	case r.ISO != "" && r.DiskImage != "":
		return errors.New("boot the nodes from an ISO or from a disk image, not both")
	case r.ISO != "":
		if err := checkISO(r.ISO); err != nil {
			return err
		}
	case r.DiskImage != "":
		if err := checkDiskImageTools(r.DiskImage); err != nil {
			return err
		}
	default:
		if _, err := os.Stat(r.Kernel); err != nil {
			return fmt.Errorf("kernel: %w", err)
		}
	}

	if r.ISO == "" && r.DiskImage == "" && r.Initrd == "" && r.BuildInitrd == nil {
		return errors.New("no initramfs: give Initrd or BuildInitrd")
	}

	if r.Initrd != "" {
		if _, err := os.Stat(r.Initrd); err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
	}

	if len(r.Nodes) == 0 {
		return errors.New("no nodes")
	}

	seen := map[string]bool{}
	gw := Gateway(r.CIDR)

	for _, n := range r.Nodes {
		switch {
		case !nameRe.MatchString(n.Name):
			return fmt.Errorf("node name %q: want a hostname of lowercase letters, digits, '-' and '.'", n.Name)
		case seen[n.Name] || seen[n.IP.String()]:
			return fmt.Errorf("node %s (%s): name or address used twice", n.Name, n.IP)
		case !r.CIDR.Contains(n.IP) || n.IP == gw || n.IP == r.CIDR.Addr():
			return fmt.Errorf("node %s: address %s is not a host address of %s other than the gateway %s", n.Name, n.IP, r.CIDR, gw)
		case n.CPUs < 1 || n.MemoryMiB < 256:
			return fmt.Errorf("node %s: %d CPUs and %d MiB: a node needs at least 1 CPU and 256 MiB", n.Name, n.CPUs, n.MemoryMiB)
		case n.DiskMiB < MinDiskMiB:
			return fmt.Errorf("node %s: a %d MiB disk is too small for Talos's partitions (at least %d MiB)", n.Name, n.DiskMiB, MinDiskMiB)
		}

		seen[n.Name], seen[n.IP.String()] = true, true
	}

	return nil
}

// Preflight checks what Create needs from this machine, so that it fails
// before anything exists: QEMU, the switch, the right to make a tap, and
// a subnet no interface already uses.
func Preflight(cidr netip.Prefix) error {
	if err := qemu.Available(); err != nil {
		return err
	}

	if err := qemu.SwitchAvailable(); err != nil {
		return err
	}

	if os.Geteuid() != 0 {
		return errors.New("the qemu provisioner must run as root: the host's port on the cluster segment is a tap interface (CAP_NET_ADMIN)")
	}

	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("list interfaces: %w", err)
	}

	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}

		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}

			p, err := netip.ParsePrefix(ipn.String())
			if err == nil && p.Overlaps(cidr) {
				return fmt.Errorf("subnet %s overlaps %s on interface %s (a Docker network or another cluster?): choose another --subnet", cidr, p, ifc.Name)
			}
		}
	}

	return nil
}

// TapName is the host's interface on a cluster's segment: derived from
// the name, because interface names have at most 15 bytes.
func TapName(cluster string) string {
	sum := sha256.Sum256([]byte(cluster))
	return "tbx" + hex.EncodeToString(sum[:4])
}

// MAC is a node's locally administered address, from its IPv4 address.
func MAC(ip netip.Addr) string {
	b := ip.As4()
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", b[1], b[2], b[3])
}

// Create starts the segment and every node, each in maintenance mode
// until it gets a config. On any failure, and when ctx ends, it destroys
// what it made and returns the error.
func Create(ctx context.Context, o Options, req Request, progress func(string)) (*State, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}

	if err := Preflight(req.CIDR); err != nil {
		return nil, err
	}

	dir := o.clusterDir(req.Name)
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("%w: %s exists; destroy the cluster first (talosctl cluster destroy --name %s)", ErrExists, dir, req.Name)
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}

	st := &State{
		Provisioner: Provisioner, Name: req.Name, CIDR: req.CIDR, Gateway: Gateway(req.CIDR), Tap: TapName(req.Name),
		Kernel: req.Kernel, Initrd: req.Initrd, ISO: req.ISO, DiskImage: req.DiskImage, UEFI: req.UEFI, dir: dir,
	}

	if err := st.create(ctx, req, progress); err != nil {
		progress("rolling back")

		if derr := Destroy(o, req.Name, progress); derr != nil {
			err = fmt.Errorf("%w (and the rollback failed: %v)", err, derr)
		}

		return nil, err
	}

	return st, nil
}

func (st *State) create(ctx context.Context, req Request, progress func(string)) error {
	if err := st.save(); err != nil {
		return err
	}

	if st.Initrd == "" && st.ISO == "" && st.DiskImage == "" {
		st.Initrd = filepath.Join(st.dir, "initramfs.cpio")

		if err := req.BuildInitrd(st.Initrd); err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}

		progress("wrote " + st.Initrd)
	}

	if _, err := qemu.StartSwitch(qemu.SwitchOptions{Dir: st.switchDir(), Tap: st.Tap, Detached: true, Hub: true}); err != nil {
		return fmt.Errorf("segment: %w", err)
	}

	if err := addressTap(st.Tap, netip.PrefixFrom(st.Gateway, st.CIDR.Bits())); err != nil {
		return err
	}

	progress(fmt.Sprintf("segment %s up: host %s on %s", st.CIDR, st.Gateway, st.Tap))

	kubelet := []string{platform.ParamKubelet + "=0"}

	if len(req.ServeCache) > 0 {
		if err := st.startCache(req.ServeCache); err != nil {
			return err
		}

		if err := st.save(); err != nil {
			return err
		}

		progress(fmt.Sprintf("serving the image cache on %s (pid %d)", CacheMirror(st.CIDR), st.CachePID))

		kubelet = nil
	}

	mask := net.IP(net.CIDRMask(st.CIDR.Bits(), 32)).String()

	for _, nr := range req.Nodes {
		if err := ctx.Err(); err != nil {
			return err
		}

		n := Node{Name: nr.Name, Type: nr.Type, IP: nr.IP, MAC: MAC(nr.IP), UUID: uuid.NewString(), CPUs: nr.CPUs, MemoryMiB: nr.MemoryMiB, DiskMiB: nr.DiskMiB}
		st.Nodes = append(st.Nodes, n)
		np := &st.Nodes[len(st.Nodes)-1]

		if err := st.startNode(np, append(kubelet, req.Cmdline...), mask, req.Launcher); err != nil {
			return err
		}

		if err := st.save(); err != nil {
			return err
		}

		progress(fmt.Sprintf("started node %s (%s, %s, pid %d)", n.Name, n.Type, n.IP, np.PID))
	}

	return nil
}

func (st *State) startNode(n *Node, extra []string, mask string, launcher []string) error {
	dir := st.NodeDir(n)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	disk := filepath.Join(dir, "disk.img")

	if err := makeDisk(disk, st.DiskImage, n.DiskMiB<<20); err != nil {
		return fmt.Errorf("node %s: disk: %w", n.Name, err)
	}

	// ip= gives the node its address and hostname from the first boot on:
	// maintenance mode is reachable on the segment, with no DHCP server.
	cmdline := append([]string{
		fmt.Sprintf("ip=%s::%s:%s:%s:eth0:off", n.IP, st.Gateway, mask, n.Name),
		"talosbox.install.disk=/dev/vda",
	}, extra...)

	qc := qemu.Config{
		Name:          n.Name,
		UUID:          n.UUID,
		Kernel:        st.Kernel,
		Initrd:        st.Initrd,
		Append:        cmdline,
		MemoryMiB:     n.MemoryMiB,
		CPUs:          n.CPUs,
		NICs:          []qemu.NIC{{ID: "n0", MAC: n.MAC, Backend: "vde,sock=" + filepath.Join(st.switchDir(), "ctl")}},
		ExtraArgs:     []string{"-drive", "file=" + disk + ",if=virtio,format=raw", "-device", "virtio-balloon-pci,free-page-reporting=on"},
		Dir:           dir,
		InPlaceReboot: true,
	}

	if st.UEFI {
		qc.UEFIVars = filepath.Join(dir, "OVMF_VARS.fd")
	}

	if st.ISO != "" || st.DiskImage != "" {
		seed := filepath.Join(dir, "seed.iso")
		if err := writeSeed(seed, n, st.CIDR, st.Gateway); err != nil {
			return err
		}

		qc.Kernel, qc.Initrd, qc.Append, qc.CDROM = "", "", nil, st.ISO
		qc.ExtraArgs = append(qc.ExtraArgs, "-drive", "file="+seed+",if=virtio,format=raw,readonly=on")
	}

	if len(launcher) > 0 {
		return st.launchNode(n, launcher, qc, disk)
	}

	pid, err := qemu.StartDetached(qc)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}

	n.PID = pid

	return nil
}

// launchStartTimeout bounds how long a launcher has to get QEMU running.
const launchStartTimeout = 30 * time.Second

// launchNode starts the node's launcher detached and waits for its QEMU.
func (st *State) launchNode(n *Node, argv []string, qc qemu.Config, disk string) error {
	dir := qc.Dir
	qc.ConsoleFile = filepath.Join(dir, "console.log")

	if err := writeLaunchConfig(dir, launchConfig{QEMU: qc, Disk: disk}); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}

	log, err := os.OpenFile(filepath.Join(dir, "launch.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()

	cmd := exec.Command(argv[0], append(argv[1:], "--dir", dir)...) //nolint:gosec // the CLI's own binary
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node %s: launcher: %w", n.Name, err)
	}

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaped while this process lives

	n.LauncherPID, n.LauncherComm = cmd.Process.Pid, commOf(argv[0])

	deadline := time.Now().Add(launchStartTimeout)

	for {
		if pid, err := qemu.ReadPID(filepath.Join(dir, "qemu.pid")); err == nil && qemu.Running(pid, "qemu-system") {
			n.PID = pid
			return nil
		}

		select {
		case err := <-exited:
			return fmt.Errorf("node %s: the launcher exited (%v): see %s", n.Name, err, filepath.Join(dir, "launch.log"))
		case <-time.After(50 * time.Millisecond): // polling a pid file another process writes
		}

		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: QEMU not running within %s: see %s", n.Name, launchStartTimeout, filepath.Join(dir, "launch.log"))
		}
	}
}

// addressTap gives the host its address on the segment and brings the
// tap up. Plain ioctls: talosctl keeps the netlink library out of its
// imports (applets/talosctl's TestImportGraph).
func addressTap(name string, addr netip.Prefix) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("tap %s: %w", name, err)
	}
	defer unix.Close(fd)

	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return fmt.Errorf("tap %s: %w", name, err)
	}

	mask := netip.AddrFrom4([4]byte(net.CIDRMask(addr.Bits(), 32)))

	for _, step := range []struct {
		what string
		req  uint
		ip   netip.Addr
	}{{"address " + addr.String(), unix.SIOCSIFADDR, addr.Addr()}, {"netmask", unix.SIOCSIFNETMASK, mask}} {
		if err := ifr.SetInet4Addr(step.ip.AsSlice()); err != nil {
			return err
		}

		if err := unix.IoctlIfreq(fd, step.req, ifr); err != nil {
			return fmt.Errorf("tap %s: set %s: %w", name, step.what, err)
		}
	}

	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("tap %s: flags: %w", name, err)
	}

	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)

	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("tap %s: up: %w", name, err)
	}

	return nil
}

// Destroy stops every node and the switch (its tap goes with it) and
// removes the state directory. It is what rolls back a failed Create, so
// it copes with any part missing.
func Destroy(o Options, name string, progress func(string)) error {
	dir := o.clusterDir(name)

	st, err := Load(o, name)
	if errors.Is(err, ErrNotFound) {
		if _, serr := os.Stat(dir); serr != nil {
			return err
		}

		st = &State{Name: name, dir: dir} // a create that died before its first save
	} else if err != nil {
		return err
	}

	var errs []error

	for i := range st.Nodes {
		n := &st.Nodes[i]
		if n.PID == 0 {
			continue
		}

		// The launcher first, or it would start QEMU again; it stops its
		// QEMU, whose PID changes with every boot.
		if n.LauncherPID != 0 {
			if err := qemu.StopProcess(n.LauncherPID, n.LauncherComm, 10*time.Second); err != nil {
				errs = append(errs, err)
				continue
			}

			if pid, err := qemu.ReadPID(filepath.Join(st.NodeDir(n), "qemu.pid")); err == nil {
				n.PID = pid
			}
		}

		if err := qemu.StopProcess(n.PID, "qemu-system", 5*time.Second); err != nil {
			errs = append(errs, err)
			continue
		}

		progress("stopped node " + n.Name + " (pid " + strconv.Itoa(n.PID) + ")")
	}

	if err := qemu.StopSwitch(st.switchDir()); err != nil {
		errs = append(errs, err)
	} else {
		progress("stopped the segment's switch")
	}

	if err := st.stopCache(); err != nil {
		errs = append(errs, err)
	} else if st.CachePID != 0 {
		progress("stopped the image cache (pid " + strconv.Itoa(st.CachePID) + ")")
	}

	if len(errs) > 0 {
		return fmt.Errorf("destroy cluster %q: %w (its state is kept in %s)", name, errors.Join(errs...), dir)
	}

	if err := os.RemoveAll(dir); err != nil {
		return err
	}

	progress("removed " + strings.TrimSuffix(dir, "/"))

	return nil
}
