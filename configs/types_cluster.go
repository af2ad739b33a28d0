package configs

import "time"

// ClusterConfig is the cluster section: what every node of the cluster shares.
type ClusterConfig struct {
	// ID and Secret identify the cluster to the discovery service (base64
	// of 32 bytes each, in either alphabet: DecodeBase64).
	ID           string                `yaml:"id,omitempty"`
	Secret       string                `yaml:"secret,omitempty"`
	ControlPlane *ControlPlaneConfig   `yaml:"controlPlane,omitempty"`
	ClusterName  string                `yaml:"clusterName,omitempty"`
	Network      *ClusterNetworkConfig `yaml:"network,omitempty"`
	// Token is the Kubernetes bootstrap token kubelets join with.
	Token                     string                 `yaml:"token,omitempty"`
	AESCBCEncryptionSecret    string                 `yaml:"aescbcEncryptionSecret,omitempty"`
	SecretboxEncryptionSecret string                 `yaml:"secretboxEncryptionSecret,omitempty"`
	CA                        *PEMCertificateAndKey  `yaml:"ca,omitempty"`
	AcceptedCAs               []PEMCertificate       `yaml:"acceptedCAs,omitempty"`
	AggregatorCA              *PEMCertificateAndKey  `yaml:"aggregatorCA,omitempty"`
	ServiceAccount            *PEMKey                `yaml:"serviceAccount,omitempty"`
	APIServer                 *APIServerConfig       `yaml:"apiServer,omitempty"`
	ControllerManager         *ControllerManager     `yaml:"controllerManager,omitempty"`
	Proxy                     *ProxyConfig           `yaml:"proxy,omitempty"`
	Scheduler                 *SchedulerConfig       `yaml:"scheduler,omitempty"`
	Discovery                 *DiscoveryConfig       `yaml:"discovery,omitempty"`
	Etcd                      *EtcdConfig            `yaml:"etcd,omitempty"`
	CoreDNS                   *CoreDNSConfig         `yaml:"coreDNS,omitempty"`
	ExternalCloudProvider     *ExternalCloudProvider `yaml:"externalCloudProvider,omitempty"`
	ExtraManifests            []string               `yaml:"extraManifests,omitempty"`
	ExtraManifestHeaders      map[string]string      `yaml:"extraManifestHeaders,omitempty"`
	InlineManifests           []InlineManifest       `yaml:"inlineManifests,omitempty"`
	AdminKubeconfig           *AdminKubeconfig       `yaml:"adminKubeconfig,omitempty"`
	// AllowSchedulingOnControlPlanes removes the control-plane taint.
	AllowSchedulingOnControlPlanes bool `yaml:"allowSchedulingOnControlPlanes,omitempty"`
	// ManifestsPrune (talosbox, not in Talos) deletes the objects that
	// talosbox applied from the bootstrap manifests, extraManifests or
	// inlineManifests and that no manifest holds any more (a removed
	// inline manifest, a disabled proxy or coreDNS). Only objects
	// carrying talosbox's label talos.dev/managed-by=talosbox are
	// deleted, never Namespaces or CRDs. Off by default, as Talos never
	// deletes: such objects are then kept and listed as kept by
	// `talosctl get manifeststatus`. Edits to the manifests roll out
	// (server-side apply) whatever this says.
	ManifestsPrune bool `yaml:"manifestsPrune,omitempty"`
}

// ControlPlaneConfig says where the Kubernetes API is reached.
type ControlPlaneConfig struct {
	// Endpoint is the https URL of the API (load balancer, VIP or DNS name).
	Endpoint           string `yaml:"endpoint,omitempty"`
	LocalAPIServerPort int    `yaml:"localAPIServerPort,omitempty"`
}

// ClusterNetworkConfig is the Kubernetes network.
type ClusterNetworkConfig struct {
	CNI            *CNIConfig `yaml:"cni,omitempty"`
	DNSDomain      string     `yaml:"dnsDomain,omitempty"`
	PodSubnets     []string   `yaml:"podSubnets,omitempty"`
	ServiceSubnets []string   `yaml:"serviceSubnets,omitempty"`
}

// CNIConfig picks the CNI: flannel (built in), custom (manifests from URLs)
// or none.
type CNIConfig struct {
	Name    string         `yaml:"name,omitempty"`
	URLs    []string       `yaml:"urls,omitempty"`
	Flannel *FlannelConfig `yaml:"flannel,omitempty"`
}

// FlannelConfig passes extra flags to the built-in flannel.
type FlannelConfig struct {
	ExtraArgs []string `yaml:"extraArgs,omitempty"`
}

// APIServerConfig configures kube-apiserver.
type APIServerConfig struct {
	Image        string            `yaml:"image,omitempty"`
	ExtraArgs    Args              `yaml:"extraArgs,omitempty"`
	ExtraVolumes []VolumeMount     `yaml:"extraVolumes,omitempty"`
	Env          map[string]string `yaml:"env,omitempty"`
	CertSANs     []string          `yaml:"certSANs,omitempty"`
	// DisablePodSecurityPolicy is kept for old configs; PSP is gone from
	// Kubernetes, so it has no effect.
	DisablePodSecurityPolicy bool                    `yaml:"disablePodSecurityPolicy,omitempty"`
	AdmissionControl         []AdmissionPluginConfig `yaml:"admissionControl,omitempty"`
	AuditPolicy              Unstructured            `yaml:"auditPolicy,omitempty"`
	Resources                *ResourcesConfig        `yaml:"resources,omitempty"`
}

// AdmissionPluginConfig configures one admission plugin.
type AdmissionPluginConfig struct {
	Name          string       `yaml:"name,omitempty"`
	Configuration Unstructured `yaml:"configuration,omitempty"`
}

// ResourcesConfig is a container's resource requests and limits.
type ResourcesConfig struct {
	Requests Unstructured `yaml:"requests,omitempty"`
	Limits   Unstructured `yaml:"limits,omitempty"`
}

// VolumeMount is a host path mounted into a control-plane static pod.
type VolumeMount struct {
	HostPath  string `yaml:"hostPath,omitempty"`
	MountPath string `yaml:"mountPath,omitempty"`
	ReadOnly  bool   `yaml:"readonly,omitempty"`
}

// ControllerManager configures kube-controller-manager.
type ControllerManager struct {
	Image        string            `yaml:"image,omitempty"`
	ExtraArgs    Args              `yaml:"extraArgs,omitempty"`
	ExtraVolumes []VolumeMount     `yaml:"extraVolumes,omitempty"`
	Env          map[string]string `yaml:"env,omitempty"`
	Resources    *ResourcesConfig  `yaml:"resources,omitempty"`
}

// ProxyConfig configures kube-proxy.
type ProxyConfig struct {
	Disabled bool   `yaml:"disabled,omitempty"`
	Image    string `yaml:"image,omitempty"`
	// Mode is iptables, ipvs or nftables.
	Mode      string `yaml:"mode,omitempty"`
	ExtraArgs Args   `yaml:"extraArgs,omitempty"`
}

// SchedulerConfig configures kube-scheduler.
type SchedulerConfig struct {
	Image        string            `yaml:"image,omitempty"`
	ExtraArgs    Args              `yaml:"extraArgs,omitempty"`
	ExtraVolumes []VolumeMount     `yaml:"extraVolumes,omitempty"`
	Env          map[string]string `yaml:"env,omitempty"`
	Resources    *ResourcesConfig  `yaml:"resources,omitempty"`
	Config       Unstructured      `yaml:"config,omitempty"`
}

// DiscoveryConfig configures how members find each other.
type DiscoveryConfig struct {
	Enabled    bool                 `yaml:"enabled,omitempty"`
	Registries *DiscoveryRegistries `yaml:"registries,omitempty"`
}

// DiscoveryRegistries lists the discovery backends.
type DiscoveryRegistries struct {
	Kubernetes *DisabledToggle           `yaml:"kubernetes,omitempty"`
	Service    *DiscoveryServiceRegistry `yaml:"service,omitempty"`
}

// DiscoveryServiceRegistry is the external discovery service.
type DiscoveryServiceRegistry struct {
	Disabled bool   `yaml:"disabled,omitempty"`
	Endpoint string `yaml:"endpoint,omitempty"`
}

// EtcdConfig configures etcd on control-plane nodes.
type EtcdConfig struct {
	Image     string                `yaml:"image,omitempty"`
	CA        *PEMCertificateAndKey `yaml:"ca,omitempty"`
	ExtraArgs Args                  `yaml:"extraArgs,omitempty"`
	// AdvertisedSubnets and ListenSubnets are CIDRs; "!" excludes.
	AdvertisedSubnets []string `yaml:"advertisedSubnets,omitempty"`
	ListenSubnets     []string `yaml:"listenSubnets,omitempty"`
}

// CoreDNSConfig configures the CoreDNS deployment.
type CoreDNSConfig struct {
	Disabled bool   `yaml:"disabled,omitempty"`
	Image    string `yaml:"image,omitempty"`
}

// ExternalCloudProvider hands node lifecycle to a cloud controller manager.
type ExternalCloudProvider struct {
	Enabled   bool     `yaml:"enabled,omitempty"`
	Manifests []string `yaml:"manifests,omitempty"`
}

// InlineManifest is a Kubernetes manifest applied at bootstrap.
type InlineManifest struct {
	Name     string `yaml:"name,omitempty"`
	Contents string `yaml:"contents,omitempty"`
}

// AdminKubeconfig sets the lifetime of the generated admin kubeconfig.
type AdminKubeconfig struct {
	CertLifetime time.Duration `yaml:"certLifetime,omitempty"`
}
