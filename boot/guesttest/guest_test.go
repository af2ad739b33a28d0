//go:build e2e

package guesttest

// The guest side: this file's code runs inside QEMU as PID 1.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/kmod"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/resources/config"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// Console markers the host waits for.
const (
	markResult = "TALOSBOX-GUEST-RESULT"
	markPhase  = "TALOSBOX-GUEST-PHASE"
)

// specPath is where the host puts the guest's instructions.
const specPath = "/guest/spec.json"

// echoPort is where every guest answers the echo check; sinkPort is
// where it reads a stream to its end and answers with the byte count.
const (
	echoPort = 7777
	sinkPort = 7778
)

// Guest checks.
const (
	checkBond      = "bond"
	checkVLAN      = "vlan"
	checkWireGuard = "wireguard"
	checkDummy     = "dummy"
	checkLACP      = "lacp"
	checkDMCrypt   = "dmcrypt"
)

// guestSpec tells a guest what to do.
type guestSpec struct {
	Name string `json:"name"`
	// Check is one of the check* constants.
	Check string `json:"check"`
	// Modules are loaded (with their dependencies) before networkd runs.
	Modules []string `json:"modules"`
	// ModuleParams are the load parameters of some of Modules.
	ModuleParams map[string][]string `json:"moduleParams,omitempty"`
	// Config is the machine config networkd applies; without one
	// networkd does not run (checks that need no network).
	Config string `json:"config"`
	// Link is the interface the traffic must cross (bond0, eth0.100, wg0).
	Link string `json:"link"`
	// Peer is the other guest's address on Link, PeerName its name.
	Peer     string `json:"peer"`
	PeerName string `json:"peerName"`
	// Addr is the guest's own address on Link (a prefix), for checks
	// without a peer.
	Addr string `json:"addr,omitempty"`
	// Deadline bounds every wait inside the guest.
	Deadline time.Duration `json:"deadline"`
}

// guestMain is the test init. It never returns: it powers the machine
// off on failure and otherwise keeps serving the echo check until the
// host kills QEMU.
func guestMain() {
	con := os.Stdout // the kernel opened /dev/console as fds 0, 1 and 2

	say := func(format string, args ...any) {
		// One write per line keeps lines whole on the serial console.
		fmt.Fprintf(con, format+"\n", args...)
	}

	defer func() {
		if r := recover(); r != nil {
			say("%s fail: panic: %v", markResult, r)
			powerOff()
		}
	}()

	g, err := startGuest(con)
	if err != nil {
		say("%s fail: %v", markResult, err)
		if g != nil {
			g.dump()
		}
		powerOff()
	}

	detail, err := g.run()
	if err != nil {
		say("%s fail: %v", markResult, err)
		g.dump()
		powerOff()
	}

	say("%s ok: %s", markResult, detail)

	// The peer may still be checking against this guest's echo server.
	// Idle until the host kills QEMU; the timer only bounds a forgotten guest.
	<-time.After(10 * time.Minute)
	say("%s: nobody stopped this guest in 10 minutes, powering off", g.spec.Name)
	powerOff()
}

func powerOff() {
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)

	select {} // PID 1 must not exit
}

type guest struct {
	spec  guestSpec
	con   io.Writer
	store *bus.Store
	start time.Time
}

func (g *guest) phase(format string, args ...any) {
	fmt.Fprintf(g.con, "%s %s %s (%.1fs)\n", markPhase, g.spec.Name, fmt.Sprintf(format, args...), time.Since(g.start).Seconds())
}

// startGuest mounts, loads the modules, starts the echo server and
// networkd's controllers.
func startGuest(con io.Writer) (*guest, error) {
	if err := platform.MountPseudo(io.Discard); err != nil {
		return nil, fmt.Errorf("mount: %w", err)
	}

	data, err := os.ReadFile(specPath)
	if err != nil {
		return nil, err
	}

	g := &guest{con: con, start: time.Now()}
	if err := json.Unmarshal(data, &g.spec); err != nil {
		return nil, fmt.Errorf("%s: %w", specPath, err)
	}

	if g.spec.Deadline == 0 {
		g.spec.Deadline = time.Minute
	}

	mods := make([]configs.KernelModule, 0, len(g.spec.Modules))
	for _, m := range g.spec.Modules {
		mods = append(mods, configs.KernelModule{Name: m, Parameters: g.spec.ModuleParams[m]})
	}

	if err := kmod.Load(mods, kmod.Options{}); err != nil {
		return nil, fmt.Errorf("load modules: %w", err)
	}

	g.phase("modules-loaded")

	if g.spec.Config == "" {
		return g, nil
	}

	ln, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", echoPort))
	if err != nil {
		return nil, err
	}

	go g.serveEcho(ln)

	sink, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", sinkPort))
	if err != nil {
		return nil, err
	}

	go serveSink(sink)

	cfg, err := configs.Decode([]byte(g.spec.Config))
	if err != nil {
		return nil, fmt.Errorf("machine config: %w", err)
	}

	mc := bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID,
		config.MachineConfigSpec{Config: cfg, YAML: g.spec.Config})

	g.store = bus.NewStore(bus.StoreOptions{})
	if err := g.store.Create(context.Background(), mc, bus.WithOwner("guesttest")); err != nil {
		return g, err
	}

	log := slog.New(slog.NewTextHandler(con, &slog.HandlerOptions{Level: slog.LevelError}))
	rt := bus.NewRuntime(g.store, bus.RuntimeOptions{Logger: log})

	if err := network.Register(rt, network.Options{NodeID: g.spec.Name}); err != nil {
		return g, err
	}

	go func() {
		if err := rt.Run(context.Background()); err != nil {
			fmt.Fprintf(con, "networkd runtime: %v\n", err)
		}
	}()

	g.phase("networkd-started")

	return g, nil
}

// serveEcho answers each line with "pong from <name>: <line>".
func (g *guest) serveEcho(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}

		go func() {
			defer c.Close()

			_ = c.SetDeadline(time.Now().Add(10 * time.Second))

			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				return
			}

			fmt.Fprintf(c, "pong from %s: %s", g.spec.Name, line)
		}()
	}
}

// echo checks the peer answers over TCP, retrying until ctx ends: the
// peer boots on its own schedule and links take a moment to come up.
func (g *guest) echo(ctx context.Context) error {
	want := fmt.Sprintf("pong from %s: ping from %s\n", g.spec.PeerName, g.spec.Name)
	addr := net.JoinHostPort(g.spec.Peer, fmt.Sprint(echoPort))

	var last error

	for attempt := 1; ; attempt++ {
		last = func() error {
			d := net.Dialer{Timeout: 2 * time.Second}

			c, err := d.DialContext(ctx, "tcp4", addr)
			if err != nil {
				return err
			}
			defer c.Close()

			_ = c.SetDeadline(time.Now().Add(3 * time.Second))

			if _, err := fmt.Fprintf(c, "ping from %s\n", g.spec.Name); err != nil {
				return err
			}

			got, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				return err
			}

			if got != want {
				return fmt.Errorf("peer answered %q, want %q", got, want)
			}

			return nil
		}()
		if last == nil {
			return nil
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("no echo from %s at %s after %d attempts: %w", g.spec.PeerName, addr, attempt, last)
		case <-time.After(250 * time.Millisecond): // retry pace, not synchronisation
		}
	}
}

// waitFor polls cond until it holds or ctx ends; for kernel state that
// has no cheap event here (sysfs attributes).
func waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	var last error

	for {
		ok, err := cond()
		if ok {
			return nil
		}

		last = err

		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), last)
			}

			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// atoi reads a sysfs number (decimal, or hex with 0x); -1 when it is not one.
func atoi(s string) int {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return -1
	}

	return int(n)
}

func sysfs(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func (g *guest) run() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), g.spec.Deadline)
	defer cancel()

	switch g.spec.Check {
	case checkBond:
		return g.runBond(ctx)
	case checkVLAN:
		return g.runVLAN(ctx)
	case checkWireGuard:
		return g.runWireGuard(ctx)
	case checkDummy:
		return g.runDummy(ctx)
	case checkLACP:
		return g.runLACP(ctx)
	case checkDMCrypt:
		return g.runDMCrypt(ctx)
	}

	return "", fmt.Errorf("unknown check %q", g.spec.Check)
}

// runBond: traffic crosses the bond, then (once the host has cut the
// active member's cable) crosses it again through the other member.
func (g *guest) runBond(ctx context.Context) (string, error) {
	if err := g.echo(ctx); err != nil {
		return "", err
	}

	bond := g.spec.Link

	if mode, err := sysfs("/sys/class/net/" + bond + "/bonding/mode"); err != nil || !strings.HasPrefix(mode, "active-backup") {
		return "", fmt.Errorf("%s mode is %q (%v), want active-backup", bond, mode, err)
	}

	if mii, err := sysfs("/sys/class/net/" + bond + "/bonding/miimon"); err != nil || mii != "100" {
		return "", fmt.Errorf("%s miimon is %q (%v), want 100", bond, mii, err)
	}

	slaves, err := sysfs("/sys/class/net/" + bond + "/bonding/slaves")
	if err != nil || len(strings.Fields(slaves)) != 2 {
		return "", fmt.Errorf("%s members are %q (%v), want two", bond, slaves, err)
	}

	active, err := sysfs("/sys/class/net/" + bond + "/bonding/active_slave")
	if err != nil || active == "" {
		return "", fmt.Errorf("%s has no active member (%v)", bond, err)
	}

	members := strings.Fields(slaves)
	backup := members[0]

	if backup == active {
		backup = members[1]
	}

	rxBefore, err := sysfs("/sys/class/net/" + backup + "/statistics/rx_packets")
	if err != nil {
		return "", err
	}

	g.phase("bond-ready active=%s members=%s", active, strings.Join(members, ","))

	// The host now takes the active member's cable away (QMP set_link).
	if err := waitFor(ctx, active+" to lose carrier", func() (bool, error) {
		c, err := sysfs("/sys/class/net/" + active + "/carrier")
		return c == "0", err
	}); err != nil {
		return "", err
	}

	var now string

	if err := waitFor(ctx, bond+" to fail over from "+active, func() (bool, error) {
		var err error
		now, err = sysfs("/sys/class/net/" + bond + "/bonding/active_slave")

		return now != "" && now != active, err
	}); err != nil {
		return "", err
	}

	g.phase("bond-failed-over active=%s", now)

	if err := g.echo(ctx); err != nil {
		return "", fmt.Errorf("after failover to %s: %w", now, err)
	}

	// The second echo came in through the new active member.
	rxAfter, err := sysfs("/sys/class/net/" + now + "/statistics/rx_packets")
	if err != nil {
		return "", err
	}

	if now != backup || atoi(rxAfter) <= atoi(rxBefore) {
		return "", fmt.Errorf("failed over to %s (want %s), which received %s packets before and %s after", now, backup, rxBefore, rxAfter)
	}

	// networkd must not have undone anything: the lost member stays
	// enslaved and administratively up.
	if s, _ := sysfs("/sys/class/net/" + bond + "/bonding/slaves"); s != slaves {
		return "", fmt.Errorf("%s members changed from %q to %q", bond, slaves, s)
	}

	if f, _ := sysfs("/sys/class/net/" + active + "/flags"); atoi(f)&unix.IFF_UP == 0 {
		return "", fmt.Errorf("%s is no longer administratively up (flags %s)", active, f)
	}

	return fmt.Sprintf("%s active-backup miimon 100 over %s: echo via %s, then via %s after %s lost carrier (%s rx packets %s -> %s)",
		bond, strings.Join(members, "+"), active, now, active, now, rxBefore, rxAfter), nil
}

// runVLAN: traffic reaches the peer on the VLAN link, and the link is
// what the config says (kind vlan, the right ID, on the right parent).
func (g *guest) runVLAN(ctx context.Context) (string, error) {
	if err := g.echo(ctx); err != nil {
		return "", err
	}

	l, err := netlink.LinkByName(g.spec.Link)
	if err != nil {
		return "", err
	}

	v, ok := l.(*netlink.Vlan)
	if !ok {
		return "", fmt.Errorf("%s is a %s link, not a vlan", g.spec.Link, l.Type())
	}

	parent, err := netlink.LinkByIndex(v.ParentIndex)
	if err != nil {
		return "", err
	}

	rx, err := sysfs("/sys/class/net/" + g.spec.Link + "/statistics/rx_packets")
	if err != nil || rx == "0" {
		return "", fmt.Errorf("%s received %s packets (%v)", g.spec.Link, rx, err)
	}

	return fmt.Sprintf("echo via %s (vlan id %d on %s, alias %q, %s packets received)", v.Name, v.VlanId, parent.Attrs().Name, v.Alias, rx), nil
}

// runWireGuard: traffic crosses the tunnel and the peer completed a
// handshake with this guest.
func (g *guest) runWireGuard(ctx context.Context) (string, error) {
	if err := g.echo(ctx); err != nil {
		return "", err
	}

	wg, err := wgctrl.New()
	if err != nil {
		return "", err
	}
	defer wg.Close()

	dev, err := wg.Device(g.spec.Link)
	if err != nil {
		return "", err
	}

	if len(dev.Peers) != 1 {
		return "", fmt.Errorf("%s has %d peers, want 1", dev.Name, len(dev.Peers))
	}

	p := dev.Peers[0]
	if p.LastHandshakeTime.IsZero() || p.ReceiveBytes == 0 {
		return "", fmt.Errorf("%s peer %s: handshake %v, %d bytes received", dev.Name, p.PublicKey, p.LastHandshakeTime, p.ReceiveBytes)
	}

	psk := ""
	if p.PresharedKey != (wgtypes.Key{}) {
		psk = ", with a preshared key"
	}

	return fmt.Sprintf("echo via %s (listen port %d, peer %s at %v%s, %d bytes received)", dev.Name, dev.ListenPort, p.PublicKey.String()[:8], p.Endpoint, psk, p.ReceiveBytes), nil
}

// dump prints what networkd reported and the kernel's links, for a
// failed check.
func (g *guest) dump() {
	if g.store != nil {
		st, err := bus.GetAs[*networkres.NetworkStatus](context.Background(), g.store,
			bus.Pointer{Namespace: networkres.Namespace, Type: networkres.NetworkStatusType, ID: networkres.NetworkStatusID})
		if err == nil {
			s := st.TypedSpec()
			fmt.Fprintf(g.con, "networkd: address=%t issues=%q\n", s.AddressReady, s.Issues)
		} else {
			fmt.Fprintf(g.con, "networkd: no status: %v\n", err)
		}
	}

	dumpBonding(g.con)

	links, err := netlink.LinkList()
	if err != nil {
		fmt.Fprintf(g.con, "links: %v\n", err)
		return
	}

	for _, l := range links {
		a := l.Attrs()

		var addrs []string

		if as, err := netlink.AddrList(l, netlink.FAMILY_ALL); err == nil {
			for _, ad := range as {
				addrs = append(addrs, ad.IPNet.String())
			}
		}

		fmt.Fprintf(g.con, "link %d %s type=%s flags=%v oper=%s master=%d addrs=%v\n", a.Index, a.Name, l.Type(), a.Flags, a.OperState, a.MasterIndex, addrs)
	}
}
