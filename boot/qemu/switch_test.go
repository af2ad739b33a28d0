package qemu

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestSwitchAttached: the segment's sockets exist once StartSwitch
// returns, and Stop ends the process.
func TestSwitchAttached(t *testing.T) {
	if err := SwitchAvailable(); err != nil {
		t.Fatal(err)
	}

	sw, err := StartSwitch(SwitchOptions{Dir: t.TempDir(), Hub: true})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(filepath.Join(sw.ctlPath(), "ctl")); err != nil {
		t.Fatalf("no control socket after start: %v", err)
	}

	if !Running(sw.PID(), "vde_switch") {
		t.Fatalf("switch pid %d is not running", sw.PID())
	}

	if err := sw.Stop(); err != nil {
		t.Fatal(err)
	}

	if Running(sw.PID(), "vde_switch") {
		t.Fatalf("switch pid %d still runs after Stop", sw.PID())
	}

	if err := sw.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestSwitchDetachedTap: a detached switch with a tap survives its
// starter, the host sees the tap, and StopSwitch (by pid file, as
// cluster destroy does) removes both.
func TestSwitchDetachedTap(t *testing.T) {
	if err := SwitchAvailable(); err != nil {
		t.Fatal(err)
	}

	tap := fmt.Sprintf("tbt%d", os.Getpid()%100000)
	dir := t.TempDir()

	sw, err := StartSwitch(SwitchOptions{Dir: dir, Tap: tap, Detached: true})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = StopSwitch(dir) })

	if _, err := net.InterfaceByName(tap); err != nil {
		t.Fatalf("tap %s: %v", tap, err)
	}

	pid, err := ReadPID(filepath.Join(dir, "switch.pid"))
	if err != nil || pid != sw.PID() {
		t.Fatalf("pid file: %d, %v; want %d", pid, err, sw.PID())
	}

	if err := StopSwitch(dir); err != nil {
		t.Fatal(err)
	}

	if Running(pid, "vde_switch") {
		t.Fatal("switch still runs")
	}

	if _, err := net.InterfaceByName(tap); err == nil {
		t.Fatalf("tap %s outlived its switch", tap)
	}
}

func TestRunning(t *testing.T) {
	if !Running(os.Getpid(), "qemu.test") {
		t.Error("this test process is not seen as running")
	}

	if Running(os.Getpid(), "vde_switch") {
		t.Error("a process of another name counts")
	}

	if Running(1<<22+1, "x") {
		t.Error("an impossible pid counts")
	}
}
