package qemu

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SwitchBinaryEnv overrides the switch binary (vde_switch on PATH).
const SwitchBinaryEnv = "TALOSBOX_VDE_SWITCH"

// SwitchOptions describe a segment.
type SwitchOptions struct {
	// Dir holds the switch's control socket directory, pid file and
	// management socket; keep its path short (unix socket paths).
	Dir string
	// Hub floods every frame to every port instead of learning MACs:
	// what a test of link-local protocols (LACP) wants to be sure of.
	Hub bool
	// Tap, when set, is a tap interface the switch creates and plugs in:
	// the host's own port on the segment (it needs CAP_NET_ADMIN). The
	// interface lives as long as the switch; the caller addresses it.
	Tap string
	// Detached starts the switch as a daemon that outlives this process
	// (talosctl cluster create); Stop it by its PID. Otherwise the switch
	// ends with this process: its stdin is a pipe only this process holds.
	Detached bool
}

// Switch is a private Ethernet segment for any number of guests: a
// vde_switch process (Debian's vde-switch) that QEMU's vde netdev plugs
// into. Nothing leaves the host, and guests may start in any order.
type Switch struct {
	dir   string
	tap   string
	pid   int
	stdin io.Closer
}

// StartSwitch starts a segment and returns once guests can plug in.
func StartSwitch(o SwitchOptions) (*Switch, error) {
	if err := SwitchAvailable(); err != nil {
		return nil, err
	}

	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("switch: %w", err)
	}

	s := &Switch{dir: o.Dir, tap: o.Tap}

	if p := s.mgmtPath(); len(p) > 107 {
		return nil, fmt.Errorf("switch: socket path %s is too long for a unix socket", p)
	}

	args := []string{"--sock", s.ctlPath(), "--mgmt", s.mgmtPath(), "--pidfile", s.pidPath()}
	if o.Hub {
		args = append(args, "--hub")
	}

	if o.Tap != "" {
		args = append(args, "--tap", o.Tap)
	}

	var err error
	if o.Detached {
		err = s.startDetached(args)
	} else {
		err = s.startAttached(args)
	}

	if err != nil {
		return nil, err
	}

	return s, nil
}

// startDetached lets vde_switch daemonize. Its parent may exit before
// the daemon has written its pid file, so readiness is waited for as in
// startAttached.
func (s *Switch) startDetached(args []string) error {
	cmd := exec.Command(switchBinary(), append(args, "--daemon")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}

	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("start %s: %w: %s", switchBinary(), err, strings.TrimSpace(string(out)))
	}

	return s.waitReady(nil, func() string { return "" })
}

// startAttached runs vde_switch in the foreground. Its console is stdin:
// a pipe only this process writes, so the switch exits on EOF when this
// process ends, however it ends.
func (s *Switch) startAttached(args []string) error {
	cmd := exec.Command(switchBinary(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}

	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}

	var stderr strings.Builder

	cmd.Stdout, cmd.Stderr = io.Discard, &stderr

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", switchBinary(), err)
	}

	s.stdin = stdin

	// The goroutine reaps the switch whenever it exits; Running sees a
	// zombie as gone, so Stop does not depend on it.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	if err := s.waitReady(exited, stderr.String); err != nil {
		_ = cmd.Process.Kill()
		return err
	}

	return nil
}

// waitReady waits for the pid file and both sockets: before them, QEMU
// would find the segment missing.
func (s *Switch) waitReady(exited <-chan error, stderr func() string) error {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()

	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()

	for {
		// The tap too: vde_switch may answer on its sockets before it has
		// made the tap, and the caller addresses the tap next (cluster
		// create qemu's "set address ...: no such device", 1 in 4 under load).
		if pid, err := readPID(s.pidPath()); err == nil && exists(s.mgmtPath()) && exists(filepath.Join(s.ctlPath(), "ctl")) &&
			(s.tap == "" || exists(filepath.Join("/sys/class/net", s.tap))) {
			s.pid = pid
			return nil
		}

		select {
		case err := <-exited:
			return fmt.Errorf("%s exited before it was ready: %v: %s", switchBinary(), err, strings.TrimSpace(stderr()))
		case <-deadline.C:
			return fmt.Errorf("%s: no pid file, sockets in %s or tap %q after 10s", switchBinary(), s.dir, s.tap)
		case <-tick.C:
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (s *Switch) ctlPath() string  { return filepath.Join(s.dir, "ctl") }
func (s *Switch) mgmtPath() string { return filepath.Join(s.dir, "mgmt") }
func (s *Switch) pidPath() string  { return filepath.Join(s.dir, "switch.pid") }

// Backend is the -netdev backend (without id) that plugs a NIC into the
// segment.
func (s *Switch) Backend() string { return "vde,sock=" + s.ctlPath() }

// PID is the switch process's id.
func (s *Switch) PID() int { return s.pid }

// Stop ends the switch (and its tap). Safe to call twice.
func (s *Switch) Stop() error {
	if s.stdin != nil {
		s.stdin.Close() // EOF on the console: a clean exit
		s.stdin = nil
	}

	return StopSwitch(s.dir)
}

// StopSwitch ends the switch whose sockets are in dir, by the PID in its
// pid file: how talosctl cluster destroy finds a detached one. A switch
// that is already gone is not an error.
func StopSwitch(dir string) error {
	s := &Switch{dir: dir}

	pid, err := readPID(s.pidPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}

	if err != nil {
		return err
	}

	return StopProcess(pid, "vde_switch", 5*time.Second)
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}

	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("pid file %s: %q is not a process id", path, strings.TrimSpace(string(b)))
	}

	return pid, nil
}

// ReadPID reads a pid file as QEMU's -pidfile and vde_switch write it.
func ReadPID(path string) (int, error) { return readPID(path) }

// StopProcess sends SIGTERM to pid, then SIGKILL after grace, and waits
// until it is gone. comm guards against a recycled PID: the process is
// only signalled while /proc/PID/comm starts with it.
func StopProcess(pid int, comm string, grace time.Duration) error {
	if !Running(pid, comm) {
		return nil
	}

	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", comm, pid, err)
	}

	deadline := time.Now().Add(grace)
	for Running(pid, comm) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(time.Hour)
		}

		time.Sleep(20 * time.Millisecond) // polling a process we do not parent: no wait(2)
	}

	return nil
}

// Running reports whether pid is a live process whose command name
// starts with comm (a zombie does not count).
func Running(pid int, comm string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}

	// pid (comm) state ...: comm may hold spaces and parentheses.
	st := string(b)

	open, closing := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
	if open < 0 || closing < open || closing+2 >= len(st) {
		return false
	}

	name, state := st[open+1:closing], st[closing+2]

	return state != 'Z' && strings.HasPrefix(name, truncComm(comm))
}

// truncComm is comm as the kernel keeps it: at most 15 bytes.
func truncComm(comm string) string {
	if len(comm) > 15 {
		return comm[:15]
	}

	return comm
}
