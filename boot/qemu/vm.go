package qemu

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// AccelEnv overrides the accelerator (tcg by default). The machines this
// project runs on offer no usable KVM (their CPUs show no vmx or svm, and
// /dev/kvm is kvm_pvm's): only set it to kvm where /proc/cpuinfo has vmx
// or svm, /dev/kvm is writable and /sys/module/kvm_pvm does not exist.
const AccelEnv = "TALOSBOX_QEMU_ACCEL"

// BinaryEnv overrides the QEMU binary (qemu-system-x86_64 on PATH).
const BinaryEnv = "TALOSBOX_QEMU"

// NIC is one virtio-net card.
type NIC struct {
	// ID names the netdev; QMP's set_link takes it.
	ID string
	// MAC is the card's address; QEMU picks one when empty.
	MAC string
	// BootROM keeps the card's option ROM (iPXE, Debian's ipxe-qemu),
	// for a network boot; without it the firmware skips loading iPXE.
	BootROM bool
	// Backend is the -netdev type and its options without the id, e.g.
	// Link's ends, or "user,restrict=on,hostfwd=tcp:127.0.0.1:P-:50000".
	Backend string
}

// Config describes one guest.
type Config struct {
	// Name labels the guest in errors and logs.
	Name string
	// Kernel and Initrd are the files QEMU boots directly. Without a
	// Kernel the machine boots through its firmware (SeaBIOS, or OVMF
	// with UEFIVars) from its disks, CDROM or network, and Append and
	// Initrd are not used.
	Kernel, Initrd string
	// CDROM is an ISO in the machine's CD-ROM drive.
	CDROM string
	// UEFIVars, when set, boots the machine on UEFI (OVMF, Debian's ovmf)
	// instead of SeaBIOS, with its NVRAM in this file: made from OVMF's
	// template when missing, and kept across boots as a machine keeps it.
	UEFIVars string
	// NetBoot boots from the network first (-boot n: PXE through the
	// first NIC with BootROM).
	NetBoot bool
	// Append is added to the kernel command line after
	// "console=ttyS0 panic=-1".
	Append []string
	// UUID is the SMBIOS system UUID (/sys/class/dmi/id/product_uuid),
	// which the node derives its nodeID encryption keys from; QEMU's
	// default is all zeros. A node keeps its UUID across boots.
	UUID string
	// Serial is the SMBIOS system serial number
	// (/sys/class/dmi/id/product_serial), where NoCloud's
	// ds=nocloud-net;s=URL names a seed on the network.
	Serial string
	// MemoryMiB is 512 when zero; CPUs 1.
	MemoryMiB, CPUs int
	// NICs are added in order: the first becomes eth0 in the guest.
	NICs []NIC
	// ExtraArgs go to QEMU as they are (disks, more devices).
	ExtraArgs []string
	// Dir receives console.log and the QMP socket; keep its path short
	// (a unix socket path has at most 107 bytes).
	Dir string
	// LogLine, when set, gets every console line as it arrives.
	LogLine func(line string) `json:"-"`
	// ConsoleFile, when set, receives the serial console instead of the
	// pipe Start reads (StartDetached: nobody reads a pipe).
	ConsoleFile string
	// InPlaceReboot lets a guest reboot within the same QEMU process, as
	// a user's node does. Tests leave it off: a reboot ends QEMU, and the
	// next boot is watched from its first line.
	InPlaceReboot bool
}

// VM is a running guest.
type VM struct {
	cfg     Config
	cmd     *exec.Cmd
	qmpPath string
	stderr  bytes.Buffer

	mu      sync.Mutex
	lines   []string
	partial string
	changed chan struct{} // closed and replaced on every new line and at exit
	exited  bool
	exitErr error
	done    chan struct{}
}

// Args returns QEMU's command line for cfg (without the binary).
func (cfg *Config) Args(qmpPath string) []string {
	accel := os.Getenv(AccelEnv)
	if accel == "" {
		accel = "tcg"
	}

	mem, cpus := cfg.MemoryMiB, cfg.CPUs
	if mem == 0 {
		mem = 512
	}

	if cpus == 0 {
		cpus = 1
	}

	cmdline := append([]string{"console=ttyS0", "panic=-1"}, cfg.Append...)

	console := "stdio,id=con0,signal=off"
	if cfg.ConsoleFile != "" {
		// Appended: a launcher that starts QEMU again after a guest reboot
		// keeps the earlier boots.
		console = "file,id=con0,path=" + cfg.ConsoleFile + ",append=on"
	}

	args := []string{
		"-accel", accel,
		"-m", strconv.Itoa(mem),
		"-smp", strconv.Itoa(cpus),
		"-display", "none",
		"-monitor", "none",
		"-chardev", console,
		"-serial", "chardev:con0",
		"-qmp", "unix:" + qmpPath + ",server=on,wait=off",
		"-device", "virtio-rng-pci",
	}

	if cfg.Kernel != "" {
		args = append(args, "-kernel", cfg.Kernel, "-append", strings.Join(cmdline, " "))

		if cfg.Initrd != "" {
			args = append(args, "-initrd", cfg.Initrd)
		}
	}

	if cfg.CDROM != "" {
		args = append(args, "-drive", "file="+cfg.CDROM+",media=cdrom,readonly=on,format=raw")
	}

	if cfg.UEFIVars != "" {
		args = append(args,
			"-drive", "if=pflash,format=raw,unit=0,readonly=on,file="+OVMFCode,
			"-drive", "if=pflash,format=raw,unit=1,file="+cfg.UEFIVars)
	}

	if cfg.NetBoot {
		args = append(args, "-boot", "n")
	}

	if cfg.Serial != "" {
		// QEMU's option syntax: a comma inside a value is doubled.
		args = append(args, "-smbios", "type=1,serial="+strings.ReplaceAll(cfg.Serial, ",", ",,"))
	}

	if cfg.UUID != "" {
		args = append(args, "-uuid", cfg.UUID)
	}

	if !cfg.InPlaceReboot {
		args = append(args, "-no-reboot")
	}

	for _, n := range cfg.NICs {
		dev := "virtio-net-pci,romfile=,netdev=" + n.ID
		if n.BootROM {
			dev = "virtio-net-pci,netdev=" + n.ID
		}
		if n.MAC != "" {
			dev += ",mac=" + n.MAC
		}

		args = append(args, "-netdev", n.Backend+",id="+n.ID, "-device", dev)
	}

	return append(args, cfg.ExtraArgs...)
}

// Start boots a guest. The caller must Kill it (tests: in t.Cleanup).
func Start(cfg Config) (*VM, error) {
	if err := Available(); err != nil {
		return nil, err
	}

	if cfg.Dir == "" {
		return nil, errors.New("qemu: Config.Dir is required")
	}

	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}

	if err := cfg.EnsureUEFIVars(); err != nil {
		return nil, err
	}

	vm := &VM{cfg: cfg, qmpPath: filepath.Join(cfg.Dir, "qmp.sock"), changed: make(chan struct{}), done: make(chan struct{})}

	if len(vm.qmpPath) > 107 {
		return nil, fmt.Errorf("qemu: QMP socket path %s is too long for a unix socket", vm.qmpPath)
	}

	log, err := os.Create(filepath.Join(cfg.Dir, "console.log"))
	if err != nil {
		return nil, err
	}

	out, err := vm.startCmd(log)
	if err != nil {
		log.Close()
		return nil, err
	}

	go func() {
		vm.read(io.TeeReader(out, log))

		err := vm.cmd.Wait()
		log.Close()

		vm.mu.Lock()
		vm.exited, vm.exitErr = true, err
		vm.notifyLocked()
		vm.mu.Unlock()
		close(vm.done)
	}()

	return vm, nil
}

func (vm *VM) startCmd(log io.Writer) (io.Reader, error) {
	vm.cmd = exec.Command(binary(), vm.cfg.Args(vm.qmpPath)...)
	vm.cmd.Stdin = nil // /dev/null: the console is output only
	vm.cmd.Stderr = &vm.stderr
	// QEMU dies with the test process even when cleanup never runs.
	vm.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}

	out, err := vm.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}

	fmt.Fprintf(log, "# %s %s\n", binary(), strings.Join(vm.cmd.Args[1:], " "))

	if err := vm.cmd.Start(); err != nil {
		return nil, fmt.Errorf("qemu %s: %w", vm.cfg.Name, err)
	}

	return out, nil
}

func (vm *VM) notifyLocked() {
	close(vm.changed)
	vm.changed = make(chan struct{})
}

// read splits the console into lines (serial output ends them "\r\n").
func (vm *VM) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)

	for {
		s, err := br.ReadString('\n')

		vm.mu.Lock()

		if s != "" {
			vm.partial += s
			if strings.HasSuffix(vm.partial, "\n") || err != nil {
				line := strings.TrimRight(vm.partial, "\r\n")
				vm.partial = ""
				vm.lines = append(vm.lines, line)
				vm.notifyLocked()

				if vm.cfg.LogLine != nil {
					vm.cfg.LogLine(line)
				}
			}
		}

		vm.mu.Unlock()

		if err != nil {
			return
		}
	}
}

// PID is QEMU's process id.
func (vm *VM) PID() int { return vm.cmd.Process.Pid }

// Done is closed when QEMU has exited.
func (vm *VM) Done() <-chan struct{} { return vm.done }

// Lines returns the console so far.
func (vm *VM) Lines() []string {
	vm.mu.Lock()
	defer vm.mu.Unlock()

	return append([]string(nil), vm.lines...)
}

// Tail returns the last n console lines and QEMU's stderr, for errors.
func (vm *VM) Tail(n int) string {
	lines := vm.Lines()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}

	var b strings.Builder

	fmt.Fprintf(&b, "--- last %d console lines of %s ---\n%s\n", len(lines), vm.cfg.Name, strings.Join(lines, "\n"))

	vm.mu.Lock()
	exited := vm.exited
	vm.mu.Unlock()

	if exited {
		if s := strings.TrimSpace(vm.stderr.String()); s != "" {
			fmt.Fprintf(&b, "--- qemu stderr ---\n%s\n", s)
		}
	}

	return b.String()
}

// WaitFor waits until a console line matches re and returns its
// submatches. It fails when ctx ends or QEMU exits first.
func (vm *VM) WaitFor(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	next := 0

	for {
		vm.mu.Lock()
		lines, changed, exited, exitErr := vm.lines[next:], vm.changed, vm.exited, vm.exitErr
		next = len(vm.lines)
		vm.mu.Unlock()

		for _, l := range lines {
			if m := re.FindStringSubmatch(l); m != nil {
				return m, nil
			}
		}

		if exited {
			return nil, fmt.Errorf("%s: qemu exited (%v) before a console line matched %q\n%s", vm.cfg.Name, exitErr, re, vm.Tail(40))
		}

		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: no console line matched %q: %w\n%s", vm.cfg.Name, re, ctx.Err(), vm.Tail(40))
		}
	}
}

// Wait waits for QEMU to exit on its own (the guest powered off).
func (vm *VM) Wait(ctx context.Context) error {
	select {
	case <-vm.done:
		vm.mu.Lock()
		defer vm.mu.Unlock()

		return vm.exitErr
	case <-ctx.Done():
		return fmt.Errorf("%s: still running: %w", vm.cfg.Name, ctx.Err())
	}
}

// Kill stops QEMU by its PID and waits for it; safe to call twice and
// after QEMU exited.
func (vm *VM) Kill() {
	select {
	case <-vm.done:
		return
	default:
	}

	_ = vm.cmd.Process.Kill()
	<-vm.done
}

// StartDetached boots a guest that outlives this process (talosctl
// cluster create): QEMU daemonizes once the machine is set up, writes its
// PID to Dir/qemu.pid and the console to cfg.ConsoleFile (Dir/console.log
// by default). Stop it with StopProcess on that PID, or let the guest
// power off.
func StartDetached(cfg Config) (pid int, err error) {
	if err := Available(); err != nil {
		return 0, err
	}

	if cfg.Dir == "" {
		return 0, errors.New("qemu: Config.Dir is required")
	}

	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return 0, err
	}

	if err := cfg.EnsureUEFIVars(); err != nil {
		return 0, err
	}

	if cfg.ConsoleFile == "" {
		cfg.ConsoleFile = filepath.Join(cfg.Dir, "console.log")
	}

	qmp, pidFile := filepath.Join(cfg.Dir, "qmp.sock"), filepath.Join(cfg.Dir, "qemu.pid")
	if len(qmp) > 107 {
		return 0, fmt.Errorf("qemu: QMP socket path %s is too long for a unix socket", qmp)
	}

	args := append(cfg.Args(qmp), "-daemonize", "-pidfile", pidFile)

	cmd := exec.Command(binary(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}

	// The parent exits once the daemon is running, or with the reason it
	// could not start (a bad disk path, a missing switch socket).
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("qemu %s: %w: %s", cfg.Name, err, strings.TrimSpace(string(out)))
	}

	return readPID(pidFile)
}

// OVMF's images, as Debian's ovmf installs them: the firmware (read-only,
// shared) and the template of a machine's NVRAM.
const (
	OVMFCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	OVMFVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
)

// EnsureUEFIVars makes the machine's NVRAM from OVMF's template on its
// first boot (Start does; a caller that runs Args itself calls it).
func (cfg *Config) EnsureUEFIVars() error {
	if cfg.UEFIVars == "" {
		return nil
	}

	if _, err := os.Stat(OVMFCode); err != nil {
		return fmt.Errorf("qemu: UEFI firmware (apt-get install ovmf): %w", err)
	}

	if _, err := os.Stat(cfg.UEFIVars); err == nil {
		return nil
	}

	b, err := os.ReadFile(OVMFVars)
	if err != nil {
		return fmt.Errorf("qemu: UEFI firmware (apt-get install ovmf): %w", err)
	}

	return os.WriteFile(cfg.UEFIVars, b, 0o644)
}
