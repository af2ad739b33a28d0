package machine

import (
	"path/filepath"

	"github.com/talosbox/talosbox/internal/platform"
)

// Runtime is where the node's two containerd instances keep their
// sockets, state and configs. On metal these are Talos's paths; in
// container mode the same tree sits under the node's state base, so that
// a node never touches the host's /run/containerd and its image store
// lives on the state volume (overlay snapshots cannot sit on the
// container's own overlay root).
type Runtime struct {
	// Prefix is "/" on metal, the state base in container mode.
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
	// HostsDir is the registry hosts tree (hosts.toml per registry).
	HostsDir string

	// CNIBinDir and CNIConfDir are the CNI plugins and network configs.
	CNIBinDir  string
	CNIConfDir string
	// PodLogDir is where the CRI writes container logs.
	PodLogDir string
}

// NewRuntime lays the runtime out for p.
func NewRuntime(p platform.Platform) Runtime {
	prefix := "/"
	if !p.IsMetal() {
		prefix = filepath.Dir(p.StateDir)
	}

	at := func(parts ...string) string { return filepath.Join(append([]string{prefix}, parts...)...) }

	return Runtime{
		Prefix:       prefix,
		SystemSocket: at("system/run/containerd/containerd.sock"),
		SystemRoot:   at("system/var/lib/containerd"),
		SystemState:  at("system/run/containerd"),
		SystemConfig: at("system/etc/containerd/config.toml"),
		CRISocket:    at("run/containerd/containerd.sock"),
		CRIRoot:      at("var/lib/containerd"),
		CRIState:     at("run/containerd"),
		CRIConfig:    at("etc/cri/containerd.toml"),
		CRIConfDir:   at("etc/cri/conf.d"),
		HostsDir:     at("etc/cri/conf.d/hosts"),
		CNIBinDir:    at("opt/cni/bin"),
		CNIConfDir:   at("etc/cni/net.d"),
		PodLogDir:    at("var/log/pods"),
	}
}

// Runtime is the node's containerd layout.
func (n *Node) Runtime() Runtime { return NewRuntime(n.opts.Platform) }
