package k8s

import (
	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// KubeletConfigSpec is the kubelet's part of the machine config with the
// cluster's defaults filled in (Talos's KubeletConfig "kubelet"): what
// `talosctl get kubeletconfigs` shows before the node's name and address
// make it a KubeletSpec.
type KubeletConfigSpec struct {
	Image                        string               `yaml:"image"`
	ClusterDNS                   []string             `yaml:"clusterDNS"`
	ClusterDomain                string               `yaml:"clusterDomain"`
	ExtraArgs                    configs.Args         `yaml:"extraArgs,omitempty"`
	ExtraMounts                  []configs.ExtraMount `yaml:"extraMounts,omitempty"`
	ExtraConfig                  map[string]any       `yaml:"extraConfig,omitempty"`
	CloudProviderExternal        bool                 `yaml:"cloudProviderExternal"`
	DefaultRuntimeSeccompEnabled bool                 `yaml:"defaultRuntimeSeccompEnabled"`
	SkipNodeRegistration         bool                 `yaml:"skipNodeRegistration"`
	StaticPodListURL             string               `yaml:"staticPodListURL"`
	DisableManifestsDirectory    bool                 `yaml:"disableManifestsDirectory"`
	EnableFSQuotaMonitoring      bool                 `yaml:"enableFSQuotaMonitoring"`
	CredentialProviderConfig     map[string]any       `yaml:"credentialProviderConfig,omitempty"`
}

// KubeletConfig is Talos's KubeletConfigs.kubernetes.talos.dev.
type KubeletConfig = bus.Typed[KubeletConfigSpec]

// The type's name and IDs, as Talos has them.
const (
	KubeletConfigType = "KubeletConfigs.kubernetes.talos.dev"
	KubeletID         = "kubelet"
)
