package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/internal/atomicfile"
)

// launchFile is a node's launcher config, in its directory.
const launchFile = "launch.json"

// launchConfig is what Launch runs.
type launchConfig struct {
	QEMU qemu.Config `json:"qemu"`
	Disk string      `json:"disk"`
}

func writeLaunchConfig(dir string, c launchConfig) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}

	return atomicfile.Write(filepath.Join(dir, launchFile), data, 0o644)
}

// Launch runs a node's machine until it powers off, as Talos's
// qemu-launch does: QEMU in the foreground with -no-reboot, started again
// after each guest reboot. A disk that can boot (the install wrote GRUB
// into its MBR) is booted through the firmware; before that the kernel
// and initramfs are given to QEMU. So a node that upgrades boots what its
// disk holds. SIGTERM (ctx) stops the machine.
func Launch(ctx context.Context, dir string, log io.Writer) error {
	data, err := os.ReadFile(filepath.Join(dir, launchFile))
	if err != nil {
		return err
	}

	var lc launchConfig
	if err := json.Unmarshal(data, &lc); err != nil {
		return fmt.Errorf("%s: %w", launchFile, err)
	}

	for boot := 1; ; boot++ {
		c, how := lc.nextBoot()

		fmt.Fprintf(log, "%s boot %d: from the %s\n", time.Now().UTC().Format(time.RFC3339), boot, how)

		if err := c.EnsureUEFIVars(); err != nil {
			return err
		}

		qmp := filepath.Join(dir, "qmp.sock")
		os.Remove(qmp) //nolint:errcheck // a stale socket from the last run

		cmd := exec.Command(qemu.Binary(), append(c.Args(qmp), "-pidfile", filepath.Join(dir, "qemu.pid"))...) //nolint:gosec // our own config
		cmd.Stdout, cmd.Stderr = log, log
		// QEMU must not outlive a launcher that is killed outright.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}

		if err := cmd.Start(); err != nil {
			return fmt.Errorf("qemu: %w", err)
		}

		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()

		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)

			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}

			return nil
		case err := <-done:
			if err != nil {
				return fmt.Errorf("qemu exited: %w", err)
			}
		}

		if !guestRebooted(c.ConsoleFile) {
			fmt.Fprintf(log, "%s the machine powered off\n", time.Now().UTC().Format(time.RFC3339))
			return nil
		}
	}
}

// nextBoot is the machine for the next boot and what it boots from: the
// kernel or the ISO until the install made the disk bootable, then the
// disk, the ISO ejected.
func (lc launchConfig) nextBoot() (qemu.Config, string) {
	c := lc.QEMU
	c.InPlaceReboot = false

	how := "kernel " + c.Kernel
	if c.CDROM != "" {
		how = "ISO " + c.CDROM
	}

	if diskBoots(lc.Disk) {
		c.Kernel, c.Initrd, c.CDROM, how = "", "", "", "disk "+lc.Disk
	}

	return c, how
}

// diskBoots says whether the disk's MBR holds GRUB's boot code.
func diskBoots(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()

	mbr := make([]byte, 512)
	if _, err := io.ReadFull(f, mbr); err != nil {
		return false
	}

	return mbr[510] == 0x55 && mbr[511] == 0xaa && bytes.Contains(mbr[:440], []byte("GRUB"))
}

// guestRebooted reads the console's tail: the kernel's last word says
// whether the guest restarted or powered off (QEMU exits on both with
// -no-reboot).
func guestRebooted(console string) bool {
	f, err := os.Open(console)
	if err != nil {
		return false
	}
	defer f.Close()

	st, err := f.Stat()
	if err != nil {
		return false
	}

	const tail = 64 << 10

	off := max(st.Size()-tail, 0)
	buf := make([]byte, st.Size()-off)

	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return false
	}

	restart := bytes.LastIndex(buf, []byte("reboot: Restarting system"))
	stop := max(bytes.LastIndex(buf, []byte("reboot: Power down")), bytes.LastIndex(buf, []byte("reboot: System halted")))

	return restart > stop
}
