// Package layout is where a node keeps what the renderers write: the
// container runtime's files and EPHEMERAL. internal/machine lays the
// runtime out with these paths (under its prefix), and an offline render
// writes to them; the test holds EphemeralDir to internal/platform's.
package layout

// The container runtime's layout on a node that owns its root (metal, and
// the Docker nodes that run Kubernetes): internal/machine.NewRuntime with
// the prefix "/".
const (
	SystemSocket = "/system/run/containerd/containerd.sock"
	SystemRoot   = "/system/var/lib/containerd"
	SystemState  = "/system/run/containerd"
	SystemConfig = "/system/etc/containerd/config.toml"
	CRISocket    = "/run/containerd/containerd.sock"
	CRIRoot      = "/var/lib/containerd"
	CRIState     = "/run/containerd"
	CRIConfig    = "/etc/cri/containerd.toml"
	CRIConfDir   = "/etc/cri/conf.d"
	HostsDir     = "/system/etc/cri/conf.d/hosts"
	CNIBinDir    = "/opt/cni/bin"
	CNIConfDir   = "/etc/cni/net.d"
)

// EphemeralDir is where EPHEMERAL is mounted: /var on metal, under the
// state volume (/var/lib/talosbox) of a Docker node.
func EphemeralDir(container bool) string {
	if container {
		return "/var/lib/talosbox/ephemeral"
	}

	return "/var"
}
