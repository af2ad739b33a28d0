package k8s

import (
	"cmp"
	"context"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// KubeletConfigController publishes KubeletConfig "kubelet" from the
// machine config, on every node with a cluster to join.
type KubeletConfigController struct{}

// Name implements bus.Controller.
func (KubeletConfigController) Name() string { return "k8s.KubeletConfigController" }

// Inputs implements bus.Controller.
func (KubeletConfigController) Inputs() []bus.Input { return []bus.Input{machineConfigInput} }

// Outputs implements bus.Controller.
func (KubeletConfigController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.KubeletConfigType}}
}

// Run implements bus.Controller.
func (c KubeletConfigController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		want := map[string]k8s.KubeletConfigSpec{}

		if spec, ok := kubeletConfigFor(cfg); ok {
			want[k8s.KubeletID] = spec
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.KubeletConfigType, want); err != nil {
			return err
		}
	}
}

// kubeletConfigFor reads cfg's kubelet section; false without a cluster
// (or with one the renderers would refuse: the KubeletSpec says why).
func kubeletConfigFor(cfg *configs.Config) (k8s.KubeletConfigSpec, bool) {
	if cfg == nil || cfg.Cluster == nil || cfg.Machine == nil {
		return k8s.KubeletConfigSpec{}, false
	}

	cl, err := render.ClusterFrom(cfg)
	if err != nil {
		return k8s.KubeletConfigSpec{}, false
	}

	k := cfg.Machine.Kubelet
	if k == nil {
		k = &configs.KubeletConfig{}
	}

	spec := k8s.KubeletConfigSpec{
		Image:                        cmp.Or(k.Image, images.Kubelet(cl.Version).String()),
		ClusterDNS:                   slices.Clone(k.ClusterDNS),
		ClusterDomain:                cl.DNSDomain,
		ExtraArgs:                    k.ExtraArgs.Clone(),
		ExtraMounts:                  slices.Clone(k.ExtraMounts),
		ExtraConfig:                  k.ExtraConfig,
		DefaultRuntimeSeccompEnabled: k.DefaultRuntimeSeccompProfileEnabled,
		SkipNodeRegistration:         k.SkipNodeRegistration,
		DisableManifestsDirectory:    k.DisableManifestsDirectory,
		CredentialProviderConfig:     k.CredentialProviderConfig,
	}

	if len(spec.ClusterDNS) == 0 {
		ips, err := render.DNSServiceIPs(cl.ServiceSubnets)
		if err != nil {
			return k8s.KubeletConfigSpec{}, false
		}

		for _, ip := range ips {
			spec.ClusterDNS = append(spec.ClusterDNS, ip.String())
		}
	}

	return spec, true
}
