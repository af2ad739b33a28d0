package k8s

import (
	"maps"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// The control-plane components, by their static pod's name.
const (
	APIServerID         = "kube-apiserver"
	ControllerManagerID = "kube-controller-manager"
	SchedulerID         = "kube-scheduler"
)

// ComponentConfigSpec is one control-plane component's rendered config:
// what its static pod is built from.
type ComponentConfigSpec struct {
	Image         string            `yaml:"image" json:"image"`
	ExtraArgs     configs.Args      `yaml:"extraArgs,omitempty" json:"extraArgs,omitempty"`
	ExtraVolumes  []ExtraVolume     `yaml:"extraVolumes,omitempty" json:"extraVolumes,omitempty"`
	Env           map[string]string `yaml:"environmentVariables,omitempty" json:"environmentVariables,omitempty"`
	Resources     Resources         `yaml:"resources" json:"resources"`
	Enabled       bool              `yaml:"enabled" json:"enabled"`
	CloudProvider string            `yaml:"cloudProvider,omitempty" json:"cloudProvider,omitempty"`

	// The apiserver's.
	EtcdServers          []string `yaml:"etcdServers,omitempty" json:"etcdServers,omitempty"`
	LocalPort            int      `yaml:"localPort,omitempty" json:"localPort,omitempty"`
	ServiceCIDRs         []string `yaml:"serviceCIDRs,omitempty" json:"serviceCIDRs,omitempty"`
	PodCIDRs             []string `yaml:"podCIDRs,omitempty" json:"podCIDRs,omitempty"`
	AdvertisedAddress    string   `yaml:"advertisedAddress,omitempty" json:"advertisedAddress,omitempty"`
	ControlPlaneEndpoint string   `yaml:"controlPlaneEndpoint,omitempty" json:"controlPlaneEndpoint,omitempty"`
	// ServiceAccountIssuers are --service-account-issuer, the issuer
	// first (the control-plane endpoint when empty), then the accepted
	// ones; APIAudiences --api-audiences (the issuer when empty).
	ServiceAccountIssuers []string `yaml:"serviceAccountIssuers,omitempty" json:"serviceAccountIssuers,omitempty"`
	APIAudiences          []string `yaml:"apiAudiences,omitempty" json:"apiAudiences,omitempty"`
	// UseAuthenticationConfig points the API server at the structured
	// authentication config instead of --anonymous-auth=false;
	// StartupProbesEnabled gives it Talos's startup, liveness and
	// readiness probes (Talos's KubeAPIServerConfig document).
	UseAuthenticationConfig bool `yaml:"useAuthenticationConfig,omitempty" json:"useAuthenticationConfig,omitempty"`
	StartupProbesEnabled    bool `yaml:"startupProbesEnabled,omitempty" json:"startupProbesEnabled,omitempty"`
}

// ExtraVolume is a hostPath volume added to a static pod.
type ExtraVolume struct {
	Name      string `yaml:"name" json:"name"`
	HostPath  string `yaml:"hostPath" json:"hostPath"`
	MountPath string `yaml:"mountPath" json:"mountPath"`
	ReadOnly  bool   `yaml:"readonly" json:"readonly"`
}

// Resources are a container's requests and limits ("cpu": "200m").
type Resources struct {
	Requests map[string]string `yaml:"requests,omitempty" json:"requests,omitempty"`
	Limits   map[string]string `yaml:"limits,omitempty" json:"limits,omitempty"`
}

// DeepCopy copies the maps and lists.
func (s ComponentConfigSpec) DeepCopy() ComponentConfigSpec {
	s.ExtraArgs = s.ExtraArgs.Clone()
	s.ExtraVolumes = slices.Clone(s.ExtraVolumes)
	s.Env = maps.Clone(s.Env)
	s.Resources.Requests = maps.Clone(s.Resources.Requests)
	s.Resources.Limits = maps.Clone(s.Resources.Limits)
	s.EtcdServers = slices.Clone(s.EtcdServers)
	s.ServiceCIDRs = slices.Clone(s.ServiceCIDRs)
	s.PodCIDRs = slices.Clone(s.PodCIDRs)
	s.ServiceAccountIssuers = slices.Clone(s.ServiceAccountIssuers)
	s.APIAudiences = slices.Clone(s.APIAudiences)

	return s
}

// The type's name, as Talos has it.
const (
	APIServerConfigType         = "APIServerConfigs.kubernetes.talos.dev"
	ControllerManagerConfigType = "ControllerManagerConfigs.kubernetes.talos.dev"
	SchedulerConfigType         = "SchedulerConfigs.kubernetes.talos.dev"
)

// ComponentConfig is the resource type of a ComponentConfigSpec.
type ComponentConfig = bus.Typed[ComponentConfigSpec]
