package constants

// Service IDs of the two containerd instances, as Talos names them.
const (
	ContainerdServiceID = "containerd"
	CRIServiceID        = "cri"
)

// ApidLocalSocket is apid's local socket on a metal node: the node's own
// processes (the console dashboard) call it as os:reader, without a
// certificate. /run is a tmpfs machined mounts, root's.
const ApidLocalSocket = "/run/talosbox/apid.sock"

// DashboardServiceID is the console dashboard's service, as Talos names it.
const DashboardServiceID = "dashboard"
