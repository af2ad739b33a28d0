package cri

import (
	"path/filepath"

	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/render/layout"
)

// Runtime is where the node's two containerd instances keep their
// sockets, state and configs. On metal these are Talos's paths; in
// container mode the same tree sits under EPHEMERAL (where machine.files
// land too, so 20-customization.part is found), so that
// a node never touches the host's /run/containerd and its image store
// lives on the state volume (overlay snapshots cannot sit on the
// container's own overlay root).
type Runtime struct {
	// Prefix is "/" on metal, EPHEMERAL in container mode.
	Prefix string

	// The system instance: services and the installer, namespace system.
	SystemSocket string
	SystemRoot   string
	SystemState  string
	SystemConfig string

	// The CRI instance: Kubernetes (namespace k8s.io) and system
	// containers such as the kubelet.
	CRISocket string
	CRIRoot   string
	CRIState  string
	CRIConfig string
	// CRIConfDir holds the *.part files merged into CRIConfDir/cri.toml.
	CRIConfDir string
	// HostsDir is the registry hosts tree (hosts.toml per registry) that
	// machined renders from machine.registries. It is Talos's real
	// location (/system/etc/...); Talos bind-mounts it over
	// /etc/cri/conf.d/hosts, here containerd is pointed at it directly.
	HostsDir string
	// BinDir holds what containerd runs by name: the shim (this binary)
	// and runc. It goes first on containerd's PATH.
	BinDir string

	// CNIBinDir and CNIConfDir are the CNI plugins and network configs.
	// CNIBinDir is writable (CNI installers add theirs); the plugins the
	// node ships are in ShippedCNIBinDir.
	CNIBinDir  string
	CNIConfDir string
	// PodLogDir is where the CRI writes container logs.
	PodLogDir string
	// NoPivotRoot: containers enter their root with MS_MOVE and chroot.
	// A metal node runs from its initramfs, out of which pivot_root(2)
	// cannot move.
	NoPivotRoot bool
}

// ShippedCNIBinDir is where the initramfs and the node image put the CNI
// plugins.
const ShippedCNIBinDir = "/opt/cni/bin"

// CNIBinDirs are the directories containerd looks for CNI plugins in.
func (rt Runtime) CNIBinDirs() []string {
	if rt.CNIBinDir == ShippedCNIBinDir {
		return []string{rt.CNIBinDir}
	}

	return []string{rt.CNIBinDir, ShippedCNIBinDir}
}

// NewRuntime lays the runtime out for p.
func NewRuntime(p platform.Platform) Runtime {
	prefix := "/"
	if !p.IsMetal() && !p.OwnRoot {
		prefix = p.EphemeralDir
	}

	// The paths are layout's (what an offline render writes to), under
	// the prefix.
	at := func(p string) string { return filepath.Join(prefix, p) }

	return Runtime{
		Prefix:       prefix,
		SystemSocket: at(layout.SystemSocket),
		SystemRoot:   at(layout.SystemRoot),
		SystemState:  at(layout.SystemState),
		SystemConfig: at(layout.SystemConfig),
		CRISocket:    at(layout.CRISocket),
		CRIRoot:      at(layout.CRIRoot),
		CRIState:     at(layout.CRIState),
		CRIConfig:    at(layout.CRIConfig),
		CRIConfDir:   at(layout.CRIConfDir),
		HostsDir:     at(layout.HostsDir),
		BinDir:       at("/system/libexec"),
		CNIBinDir:    at(layout.CNIBinDir),
		CNIConfDir:   at(layout.CNIConfDir),
		PodLogDir:    at("/var/log/pods"),
		NoPivotRoot:  p.IsMetal(),
	}
}
