package constants

// Cluster defaults, applied when the config is silent.
const (
	DefaultDNSDomain     = "cluster.local"
	DefaultPodSubnet     = "10.244.0.0/16"
	DefaultServiceSubnet = "10.96.0.0/12"
)

// The paths the control plane's static pods read: secrets and configs are
// rendered there by the node, never shipped in the pod specs.
const (
	SecretsDir = "/system/secrets/kubernetes"
	ConfigDir  = "/system/config/kubernetes"
	AuditDir   = "/var/log/audit/kube"
)

// The kubelet's files, where Talos keeps them.
const (
	KubeletConfigPath     = "/etc/kubernetes/kubelet.yaml"
	KubeletBootstrapPath  = "/etc/kubernetes/bootstrap-kubeconfig"
	KubeletKubeconfigPath = "/etc/kubernetes/kubeconfig-kubelet"
	KubeletCAPath         = "/etc/kubernetes/pki/ca.crt"
	KubeletCertDir        = "/var/lib/kubelet/pki"
	ManifestsDir          = "/etc/kubernetes/manifests"
	ResolvConfPath        = "/system/resolved/resolv.conf"
	KubeletHealthzURL     = "http://127.0.0.1:10248/healthz"
)

// ControlPlaneTaint is the taint control planes register with unless
// cluster.allowSchedulingOnControlPlanes.
const ControlPlaneTaint = "node-role.kubernetes.io/control-plane"

// The users the control-plane components run as (Talos's uids).
const (
	APIServerUID         = 65534
	ControllerManagerUID = 65535
	SchedulerUID         = 65536
)

// Pods whose containers carry the same ShimGroupAnnotation share one runc
// shim (containerd's grouping; the CRI passes the pod annotation through).
// Every pod talosbox renders (the static control plane, kube-proxy,
// flannel, CoreDNS) is in SystemShimGroup: one shim process for all of
// them on a node instead of one per pod, which saves a shim's memory
// (about 12 MiB PSS) per pod. If that shim died, every grouped pod on the
// node would be restarted by the kubelet, not just one.
const (
	ShimGroupAnnotation = "io.containerd.runc.v2.group"
	SystemShimGroup     = "kube-system"
)
