package configs

// FeaturesConfig is machine.features. The booleans are pointers because Talos
// treats "unset" differently from "false" for some of them across versions.
type FeaturesConfig struct {
	RBAC                     *bool                     `yaml:"rbac,omitempty"`
	StableHostname           *bool                     `yaml:"stableHostname,omitempty"`
	KubernetesTalosAPIAccess *KubernetesTalosAPIAccess `yaml:"kubernetesTalosAPIAccess,omitempty"`
	APIDCheckExtKeyUsage     *bool                     `yaml:"apidCheckExtKeyUsage,omitempty"`
	DiskQuotaSupport         *bool                     `yaml:"diskQuotaSupport,omitempty"`
	KubePrism                *KubePrism                `yaml:"kubePrism,omitempty"`
	HostDNS                  *HostDNS                  `yaml:"hostDNS,omitempty"`
	ImageCache               *ImageCache               `yaml:"imageCache,omitempty"`
	NodeAddressSortAlgorithm string                    `yaml:"nodeAddressSortAlgorithm,omitempty"`
}

// KubernetesTalosAPIAccess lets pods in the listed namespaces reach the Talos
// API with the listed roles.
type KubernetesTalosAPIAccess struct {
	Enabled                     *bool    `yaml:"enabled,omitempty"`
	AllowedRoles                []string `yaml:"allowedRoles,omitempty"`
	AllowedKubernetesNamespaces []string `yaml:"allowedKubernetesNamespaces,omitempty"`
}

// KubePrism is the node-local load balancer in front of the API servers.
type KubePrism struct {
	Enabled *bool `yaml:"enabled,omitempty"`
	Port    int   `yaml:"port,omitempty"`
}

// HostDNS is the caching DNS resolver on the host.
type HostDNS struct {
	Enabled              *bool `yaml:"enabled,omitempty"`
	ForwardKubeDNSToHost *bool `yaml:"forwardKubeDNSToHost,omitempty"`
	ResolveMemberNames   *bool `yaml:"resolveMemberNames,omitempty"`
}

// ImageCache serves images from a local cache.
type ImageCache struct {
	LocalEnabled *bool `yaml:"localEnabled,omitempty"`
}
