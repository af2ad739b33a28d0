package k8s

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/images"
)

// KubeletConfigSpec is the kubelet's part of the machine config with the
// cluster's defaults filled in (Talos's KubeletConfig "kubelet"): what
// `talosctl get kubeletconfigs` shows before the node's name and address
// make it a KubeletSpec.
type KubeletConfigSpec struct {
	Image                        string               `yaml:"image"`
	ClusterDNS                   []string             `yaml:"clusterDNS"`
	ClusterDomain                string               `yaml:"clusterDomain"`
	ExtraArgs                    map[string]string    `yaml:"extraArgs,omitempty"`
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

// KubeletConfigController publishes KubeletConfig "kubelet" from the
// machine config, on every node with a cluster to join.
type KubeletConfigController struct{}

// Name implements bus.Controller.
func (KubeletConfigController) Name() string { return "k8s.KubeletConfigController" }

// Inputs implements bus.Controller.
func (KubeletConfigController) Inputs() []bus.Input { return []bus.Input{machineConfigInput} }

// Outputs implements bus.Controller.
func (KubeletConfigController) Outputs() []bus.Output { return []bus.Output{{Type: KubeletConfigType}} }

// Run implements bus.Controller.
func (c KubeletConfigController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		want := map[string]KubeletConfigSpec{}

		if spec, ok := kubeletConfigFor(cfg); ok {
			want[KubeletID] = spec
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), NamespaceK8s, KubeletConfigType, want); err != nil {
			return err
		}
	}
}

// kubeletConfigFor reads cfg's kubelet section; false without a cluster
// (or with one the renderers would refuse: the KubeletSpec says why).
func kubeletConfigFor(cfg *configs.Config) (KubeletConfigSpec, bool) {
	if cfg == nil || cfg.Cluster == nil || cfg.Machine == nil {
		return KubeletConfigSpec{}, false
	}

	cl, err := ClusterFrom(cfg)
	if err != nil {
		return KubeletConfigSpec{}, false
	}

	k := cfg.Machine.Kubelet
	if k == nil {
		k = &configs.KubeletConfig{}
	}

	spec := KubeletConfigSpec{
		Image:                        cmp.Or(k.Image, images.Kubelet(cl.Version).String()),
		ClusterDNS:                   slices.Clone(k.ClusterDNS),
		ClusterDomain:                cl.DNSDomain,
		ExtraArgs:                    maps.Clone(k.ExtraArgs),
		ExtraMounts:                  slices.Clone(k.ExtraMounts),
		ExtraConfig:                  k.ExtraConfig,
		DefaultRuntimeSeccompEnabled: k.DefaultRuntimeSeccompProfileEnabled,
		SkipNodeRegistration:         k.SkipNodeRegistration,
		DisableManifestsDirectory:    k.DisableManifestsDirectory,
		CredentialProviderConfig:     k.CredentialProviderConfig,
	}

	if len(spec.ClusterDNS) == 0 {
		ips, err := DNSServiceIPs(cl.ServiceSubnets)
		if err != nil {
			return KubeletConfigSpec{}, false
		}

		for _, ip := range ips {
			spec.ClusterDNS = append(spec.ClusterDNS, ip.String())
		}
	}

	return spec, true
}
