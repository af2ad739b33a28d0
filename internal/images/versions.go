// Package images is the catalog of container images a talosbox node runs:
// the pinned versions of every component we build from source, and the
// references nodes pull them by. It is the one list that `gen config`,
// `talosctl image default` and the image builder share, so a version is
// changed in exactly one place.
package images

// The pinned versions. Kubernetes is the default for new clusters;
// KubernetesPrevious is the newest patch of the minor before it, the
// starting point of upgrade-k8s. Changing a pin here rebuilds what depends
// on it (internal/imagebuild keys its cache by version).
const (
	Kubernetes         = "1.34.12"
	KubernetesPrevious = "1.33.13"

	// CoreDNS and Flannel are the versions Talos 1.11 ships with 1.34.
	CoreDNS = "1.12.4"
	Flannel = "0.27.4"

	// CNIPlugins is github.com/containernetworking/plugins: bridge,
	// host-local, loopback and portmap for the node's /opt/cni/bin.
	CNIPlugins = "1.7.1"

	// Pause is the sandbox image's tag; the program is ours (images/pause).
	Pause = "3.10"

	// Echo is the version of images/echo, the tests' HTTP workload.
	Echo = "1.1"

	// Containerd is github.com/containerd/containerd/v2, linked into the
	// talosbox binary (applets/containerd); go.mod requires this version.
	Containerd = "2.4.2"

	// Ginkgo is the ginkgo CLI that runs e2e.test in parallel: the
	// github.com/onsi/ginkgo/v2 Kubernetes' go.mod requires (a test
	// checks they agree).
	Ginkgo = "2.21.0"

	// Runc is github.com/opencontainers/runc, built static with libseccomp
	// into the node's runtime directory (cgo: its nsexec is C).
	Runc = "1.5.2"
)

// KubernetesVersions are the versions the builder knows how to build, the
// default first.
func KubernetesVersions() []string { return []string{Kubernetes, KubernetesPrevious} }
