package images

import (
	"fmt"
	"regexp"
	"strings"
)

// The components a node runs as images, by the names the builder and the
// manifests use.
const (
	FlannelName           = "flannel"
	CoreDNSName           = "coredns"
	APIServerName         = "kube-apiserver"
	ControllerManagerName = "kube-controller-manager"
	SchedulerName         = "kube-scheduler"
	ProxyName             = "kube-proxy"
	KubeletName           = "kubelet"
	PauseName             = "pause"

	// EchoName is the project's small HTTP image (images/echo), which
	// the end-to-end tests deploy; no node needs it.
	EchoName = "echo"
)

// Ref is one image reference a node pulls.
type Ref struct {
	Component  string // one of the names above
	Repository string // registry.k8s.io/kube-apiserver
	Tag        string // v1.34.12
}

func (r Ref) String() string { return r.Repository + ":" + r.Tag }

var kubeVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)$`)

// CanonicalKubernetes returns v as "1.34.12", with or without a leading v
// on input; anything but MAJOR.MINOR.PATCH is an error.
func CanonicalKubernetes(v string) (string, error) {
	if !kubeVersion.MatchString(v) {
		return "", fmt.Errorf("kubernetes version %q: want MAJOR.MINOR.PATCH, e.g. %s", v, Kubernetes)
	}

	return strings.TrimPrefix(v, "v"), nil
}

// APIServer and the functions below give one component's reference for a
// Kubernetes version ("1.34.12" or "v1.34.12").
func APIServer(k8s string) Ref { return ref(APIServerName, "registry.k8s.io/kube-apiserver", k8s) }

// ControllerManager is kube-controller-manager's reference.
func ControllerManager(k8s string) Ref {
	return ref(ControllerManagerName, "registry.k8s.io/kube-controller-manager", k8s)
}

// Scheduler is kube-scheduler's reference.
func Scheduler(k8s string) Ref { return ref(SchedulerName, "registry.k8s.io/kube-scheduler", k8s) }

// Proxy is kube-proxy's reference.
func Proxy(k8s string) Ref { return ref(ProxyName, "registry.k8s.io/kube-proxy", k8s) }

// Kubelet is the kubelet's reference, Talos's image name.
func Kubelet(k8s string) Ref { return ref(KubeletName, "ghcr.io/siderolabs/kubelet", k8s) }

// CoreDNSImage is the cluster DNS image.
func CoreDNSImage() Ref { return ref(CoreDNSName, "registry.k8s.io/coredns/coredns", CoreDNS) }

// FlannelImage is the default CNI's image, Talos's name.
func FlannelImage() Ref { return ref(FlannelName, "ghcr.io/siderolabs/flannel", Flannel) }

// PauseImage is the pod sandbox image.
func PauseImage() Ref {
	return Ref{Component: PauseName, Repository: "registry.k8s.io/pause", Tag: Pause}
}

// EchoImage is the test workload: `echo serve` answers with its hostname,
// `echo get URL` is its client.
func EchoImage() Ref {
	return Ref{Component: EchoName, Repository: "docker.io/talosbox/echo", Tag: "v" + Echo}
}

func ref(component, repo, version string) Ref {
	return Ref{Component: component, Repository: repo, Tag: "v" + strings.TrimPrefix(version, "v")}
}

// Default lists the images a node of Kubernetes version k8s needs, in the
// order `talosctl image default` prints Talos's list. Talos's list also
// names an etcd image and the installer; talosbox embeds etcd in its own
// binary and boots from its initramfs, so a node pulls neither.
func Default(k8s string) []Ref {
	return []Ref{
		FlannelImage(),
		CoreDNSImage(),
		APIServer(k8s),
		ControllerManager(k8s),
		Scheduler(k8s),
		Proxy(k8s),
		Kubelet(k8s),
		PauseImage(),
	}
}

// The image cache a node serves itself as its registry mirror, as Talos's
// registryd serves its IMAGECACHE volume: a Docker node gets the OCI layout
// of make images at CacheDir and serves it on CacheAddr, and its config
// names CacheMirror as the mirror of every registry in Registries.
const (
	CacheDir    = "/system/imagecache"
	CacheAddr   = "127.0.0.1:65000"
	CacheMirror = "http://" + CacheAddr
)

// Registries are the registries the default images come from.
func Registries() []string { return []string{"registry.k8s.io", "ghcr.io", "docker.io"} }
