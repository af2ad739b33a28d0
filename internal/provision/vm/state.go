// Package vm is the QEMU provisioner behind `talosctl cluster create qemu`:
// local clusters of virtual machines that boot Debian's cloud kernel and
// the talosbox initramfs on the metal platform, each with its own disk,
// on one private Ethernet segment.
//
// The segment is a vde_switch (Debian's vde-switch) with a tap interface
// plugged in as the host's port: the host holds the gateway address and
// reaches every node at its own address, as with Talos's QEMU
// provisioner's bridge. Nothing is routed off the segment. QEMU and the
// switch run detached, so the cluster outlives the command that made it;
// everything about it lives in one state directory
// (<state>/<name>/state.json plus a directory per node), which is how
// Destroy and Load find it again from another process.
//
// Typical use by a CLI:
//
//	st, err := vm.Create(ctx, vm.Options{StateDir: dir}, req, func(s string) { fmt.Println(s) })
//	...
//	err = vm.Destroy(vm.Options{StateDir: dir}, "talos-default", progress)
package vm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/internal/atomicfile"
)

// Provisioner is the name state.json records and `cluster show` prints.
const Provisioner = "qemu"

// ErrNotFound means no state directory exists for the cluster.
var ErrNotFound = errors.New("cluster not found")

// ErrExists means a state directory already exists for the cluster.
var ErrExists = errors.New("cluster already exists")

// Options locate the clusters.
type Options struct {
	// StateDir holds one directory per cluster (talosctl's --state,
	// ~/.talos/clusters by default).
	StateDir string
}

func (o Options) clusterDir(name string) string { return filepath.Join(o.StateDir, name) }

// State is a cluster as created: what Destroy and Show need, written to
// state.json after every step of Create, so that a create that failed
// halfway can still be destroyed.
type State struct {
	Provisioner string       `json:"provisioner"`
	Name        string       `json:"name"`
	CIDR        netip.Prefix `json:"cidr"`
	// Gateway is the host's address on the segment (on Tap).
	Gateway netip.Addr `json:"gateway"`
	Tap     string     `json:"tap"`
	Kernel  string     `json:"kernel"`
	Initrd  string     `json:"initrd"`
	// ISO is what the nodes boot instead of Kernel and Initrd, if set.
	ISO string `json:"iso,omitempty"`
	// DiskImage is what every node's disk was made from instead, if set.
	DiskImage string `json:"diskImage,omitempty"`
	// UEFI: the nodes boot on OVMF.
	UEFI  bool   `json:"uefi,omitempty"`
	Nodes []Node `json:"nodes"`
	// CachePID is the host's image cache server for the nodes (0: none),
	// CacheComm its process name, checked before it is stopped.
	CachePID  int    `json:"cachePid,omitempty"`
	CacheComm string `json:"cacheComm,omitempty"`

	dir string
}

// Node is one virtual machine.
type Node struct {
	Name      string     `json:"name"`
	Type      string     `json:"type"`
	IP        netip.Addr `json:"ip"`
	MAC       string     `json:"mac"`
	CPUs      int        `json:"cpus"`
	MemoryMiB int        `json:"memoryMiB"`
	DiskMiB   int64      `json:"diskMiB"`
	// UUID is the node's SMBIOS system UUID (its nodeID key source).
	UUID string `json:"uuid,omitempty"`
	// PID is QEMU's, 0 until it started; under a launcher, its first
	// QEMU's (qemu.pid in the node's directory has the current one).
	PID int `json:"pid,omitempty"`
	// LauncherPID is the node's launcher (0: none), LauncherComm its
	// process name, checked before it is stopped.
	LauncherPID  int    `json:"launcherPid,omitempty"`
	LauncherComm string `json:"launcherComm,omitempty"`
}

// Dir is the cluster's state directory.
func (s *State) Dir() string { return s.dir }

// NodeDir holds a node's disk, console log, pid file and QMP socket.
func (s *State) NodeDir(n *Node) string { return filepath.Join(s.dir, n.Name) }

// ConsoleLog is the node's serial console, kernel and [talos] lines.
func (s *State) ConsoleLog(n *Node) string { return filepath.Join(s.NodeDir(n), "console.log") }

// Running reports whether the node's QEMU process is alive.
func (s *State) Running(n *Node) bool {
	if n.LauncherPID != 0 {
		pid, err := qemu.ReadPID(filepath.Join(s.NodeDir(n), "qemu.pid"))

		return err == nil && qemu.Running(pid, "qemu-system")
	}

	return n.PID != 0 && qemu.Running(n.PID, "qemu-system")
}

// SwitchRunning reports whether the segment's switch is alive.
func (s *State) SwitchRunning() bool {
	pid, err := qemu.ReadPID(filepath.Join(s.switchDir(), "switch.pid"))
	return err == nil && qemu.Running(pid, "vde_switch")
}

func (s *State) switchDir() string { return filepath.Join(s.dir, "switch") }

func (s *State) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}

	return atomicfile.Write(filepath.Join(s.dir, "state.json"), append(data, '\n'), 0o644)
}

// Load reads a cluster's state.
func Load(o Options, name string) (*State, error) {
	dir := o.clusterDir(name)

	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no state.json", ErrNotFound, dir)
	}

	if err != nil {
		return nil, err
	}

	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("cluster %q: %s: %w", name, filepath.Join(dir, "state.json"), err)
	}

	if s.Provisioner != Provisioner {
		return nil, fmt.Errorf("cluster %q: %s: provisioner %q, not %q", name, dir, s.Provisioner, Provisioner)
	}

	s.dir = dir

	return &s, nil
}

// Exists reports whether a cluster of this name has a state directory.
func Exists(o Options, name string) bool {
	_, err := os.Stat(filepath.Join(o.clusterDir(name), "state.json"))
	return err == nil
}
