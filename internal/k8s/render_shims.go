package k8s

import (
	"net/netip"

	"github.com/talosbox/talosbox/configs"
	k8srender "github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// The renderers are pure functions of the config and live in
// internal/k8s/render, which talosctl can import (validate --render);
// these names keep the node's controllers and tests reading as before.

// Defaults Talos applies when the config is silent.
const (
	DefaultDNSDomain     = k8srender.DefaultDNSDomain
	DefaultPodSubnet     = k8srender.DefaultPodSubnet
	DefaultServiceSubnet = k8srender.DefaultServiceSubnet
)

// The paths the control plane reads (REFERENCE-K8S §1.2).
const (
	SecretsDir = k8srender.SecretsDir
	ConfigDir  = k8srender.ConfigDir
	AuditDir   = k8srender.AuditDir
)

// The users the control-plane components run as (Talos's uids).
const (
	APIServerUID         = k8srender.APIServerUID
	ControllerManagerUID = k8srender.ControllerManagerUID
	SchedulerUID         = k8srender.SchedulerUID
)

// The kubelet's files (REFERENCE-K8S §1.2).
const (
	KubeletConfigPath     = k8srender.KubeletConfigPath
	KubeletBootstrapPath  = k8srender.KubeletBootstrapPath
	KubeletKubeconfigPath = k8srender.KubeletKubeconfigPath
	KubeletCAPath         = k8srender.KubeletCAPath
	KubeletCertDir        = k8srender.KubeletCertDir
	ManifestsDir          = k8srender.ManifestsDir
	ResolvConfPath        = k8srender.ResolvConfPath
	KubeletHealthzURL     = k8srender.KubeletHealthzURL
	controlPlaneTaint     = k8srender.ControlPlaneTaint
)

// Renderer types; see internal/k8s/render.
type (
	Cluster       = k8srender.Cluster
	KubeletInputs = k8srender.KubeletInputs
	File          = k8srender.File
)

// podVersions are the annotations that make the kubelet restart a pod
// whenever what it reads changes.
type podVersions struct {
	secrets, config, configFile string
}

// ClusterFrom reads the cluster section.
func ClusterFrom(cfg *configs.Config) (Cluster, error) { return k8srender.ClusterFrom(cfg) }

// ComponentConfigs are the three control-plane components' configs of a
// control-plane node, by ID.
func ComponentConfigs(cfg *configs.Config) (map[string]k8s.ComponentConfigSpec, error) {
	return k8srender.ComponentConfigs(cfg)
}

// StaticPodFor renders one control-plane component's pod.
func StaticPodFor(id string, spec k8s.ComponentConfigSpec, v podVersions) (map[string]any, error) {
	return k8srender.StaticPodFor(id, spec, k8srender.PodVersions{Secrets: v.secrets, Config: v.config, ConfigFile: v.configFile})
}

// ConfigFiles are the files under ConfigDir the apiserver and the
// scheduler read.
func ConfigFiles(cfg *configs.Config) ([]File, error) { return k8srender.ConfigFiles(cfg) }

// FilesVersion is a short digest of a set of files.
func FilesVersion(files []File) string { return k8srender.FilesVersion(files) }

// KubeletSpecFor renders the kubelet's command line and configuration.
func KubeletSpecFor(cfg *configs.Config, in KubeletInputs) (k8s.KubeletSpecSpec, error) {
	return k8srender.KubeletSpecFor(cfg, in)
}

// DNSServiceIPs are the cluster DNS service's addresses (10.96.0.10).
func DNSServiceIPs(serviceSubnets []string) ([]netip.Addr, error) {
	return k8srender.DNSServiceIPs(serviceSubnets)
}

// APIServerServiceIPs are the kubernetes service's addresses (10.96.0.1).
func APIServerServiceIPs(serviceSubnets []string) ([]netip.Addr, error) {
	return k8srender.APIServerServiceIPs(serviceSubnets)
}

// NodeIPConfigFor is how the node IP is picked (REFERENCE-K8S §3.3).
func NodeIPConfigFor(validSubnets []string, cl Cluster) k8s.NodeIPConfigSpec {
	return k8srender.NodeIPConfigFor(validSubnets, cl)
}

// PickNodeIPs applies a NodeIPConfig to the node's addresses.
func PickNodeIPs(cfg k8s.NodeIPConfigSpec, addrs []netip.Addr) (picked, skipped []netip.Addr, err error) {
	return k8srender.PickNodeIPs(cfg, addrs)
}
