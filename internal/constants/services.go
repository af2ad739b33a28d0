package constants

// Service IDs of the two containerd instances, as Talos names them.
const (
	ContainerdServiceID = "containerd"
	CRIServiceID        = "cri"
)
