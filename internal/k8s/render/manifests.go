package render

import (
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

	return o, nil
}
