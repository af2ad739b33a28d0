package render

import (
	"fmt"
	"maps"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/k8s/manifests/templates"
)

// ManifestOptions are the bootstrap manifests' settings from the config.
func ManifestOptions(cfg *configs.Config) (templates.Options, error) {
	cl, err := ClusterFrom(cfg)
	if err != nil {
		return templates.Options{}, err
	}

	c := cfg.Cluster
	o := templates.Options{
		ClusterName: cl.Name, Server: cl.Endpoint.String(),
		PodSubnets: cl.PodSubnets, ServiceSubnets: cl.ServiceSubnets, DNSDomain: cl.DNSDomain,
		BootstrapToken: c.Token, KubePrismPort: KubePrismPort(cfg),
		ProxyEnabled: true, CoreDNSEnabled: true, FlannelEnabled: true,
	}

	if p := c.Proxy; p != nil {
		o.ProxyEnabled = !p.Disabled
		o.ProxyImage, o.ProxyMode, o.ProxyExtraArgs = p.Image, p.Mode, p.ExtraArgs
	}

	if d := c.CoreDNS; d != nil {
		o.CoreDNSEnabled = !d.Disabled
		o.CoreDNSImage = d.Image
	}

	if n := c.Network; n != nil && n.CNI != nil {
		o.FlannelEnabled = n.CNI.Name == "" || n.CNI.Name == "flannel"
		if n.CNI.Flannel != nil {
			o.FlannelExtraArgs = n.CNI.Flannel.ExtraArgs
		}
	}

	manifestDocuments(cfg, &o)

	return o, nil
}

// manifestDocuments sets what the bootstrap manifests take from the
// Kubernetes documents v1alpha1 has no field for: kube-proxy's
// configuration and resources (KubeProxyConfig) and flannel's backend and
// resources (KubeFlannelCNIConfig).
func manifestDocuments(cfg *configs.Config, o *templates.Options) {
	if p := configs.DocumentOf[*configs.KubeProxyConfig](cfg); p != nil {
		if len(p.Config) > 0 {
			o.ProxyConfig = map[string]any(p.Config)
		}

		o.ProxyResources = templateResources(p.Resources)
	}

	if f := configs.DocumentOf[*configs.KubeFlannelCNIConfig](cfg); f != nil {
		backend := map[string]any{"Type": f.BackendType}

		if f.BackendPort != 0 {
			backend["Port"] = f.BackendPort
		}

		if f.BackendMTU != 0 {
			backend["MTU"] = f.BackendMTU
		}

		// The extra settings go over the document's own, as in Talos.
		maps.Copy(backend, f.BackendExtraConfig)

		o.FlannelBackend = backend
		o.FlannelResources = templateResources(f.Resources)
	}
}

func templateResources(r *configs.ResourcesConfig) templates.Resources {
	var out templates.Resources

	if r == nil {
		return out
	}

	for _, part := range []struct {
		from configs.Unstructured
		to   *map[string]string
	}{{r.Requests, &out.Requests}, {r.Limits, &out.Limits}} {
		for k, v := range part.from {
			if *part.to == nil {
				*part.to = map[string]string{}
			}

			(*part.to)[k] = fmt.Sprint(v)
		}
	}

	return out
}
