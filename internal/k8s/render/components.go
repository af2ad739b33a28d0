package render

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// Cluster is what every Kubernetes controller reads from the config,
// with Talos's defaults filled in.
type Cluster struct {
	Name           string
	Endpoint       *url.URL
	LocalPort      int
	DNSDomain      string
	PodSubnets     []string
	ServiceSubnets []string
	Version        string // "1.34.12", from the apiserver image tag
}

// ClusterFrom reads the cluster section.
func ClusterFrom(cfg *configs.Config) (Cluster, error) {
	if cfg == nil || cfg.Cluster == nil {
		return Cluster{}, fmt.Errorf("the config has no cluster section")
	}

	c := cfg.Cluster
	out := Cluster{Name: c.ClusterName, LocalPort: cfg.LocalAPIServerPort(), DNSDomain: constants.DefaultDNSDomain,
		PodSubnets: []string{constants.DefaultPodSubnet}, ServiceSubnets: []string{constants.DefaultServiceSubnet}, Version: images.Kubernetes}

	if c.ControlPlane == nil || c.ControlPlane.Endpoint == "" {
		return Cluster{}, fmt.Errorf("cluster.controlPlane.endpoint is required")
	}

	u, err := url.Parse(c.ControlPlane.Endpoint)
	if err != nil {
		return Cluster{}, fmt.Errorf("cluster.controlPlane.endpoint: %w", err)
	}

	out.Endpoint = u

	if n := c.Network; n != nil {
		out.DNSDomain = cmp.Or(configs.NormalizeDNSDomain(n.DNSDomain), out.DNSDomain)

		if len(n.PodSubnets) > 0 {
			out.PodSubnets = slices.Clone(n.PodSubnets)
		}

		if len(n.ServiceSubnets) > 0 {
			out.ServiceSubnets = slices.Clone(n.ServiceSubnets)
		}
	}

	if c.APIServer != nil {
		if v := imageVersion(c.APIServer.Image); v != "" {
			out.Version = v
		}
	}

	return out, nil
}

// imageVersion is the semver of an image tag ("registry.k8s.io/kube-apiserver:v1.34.12" → "1.34.12").
func imageVersion(image string) string {
	for i := len(image) - 1; i >= 0 && image[i] != '/'; i-- {
		if image[i] == ':' {
			if v, err := images.CanonicalKubernetes(image[i+1:]); err == nil {
				return v
			}

			return ""
		}
	}

	return ""
}

func volumes(in []configs.VolumeMount) []k8s.ExtraVolume {
	out := make([]k8s.ExtraVolume, 0, len(in))

	for i, v := range in {
		out = append(out, k8s.ExtraVolume{Name: "extra-" + strconv.Itoa(i), HostPath: v.HostPath, MountPath: v.MountPath, ReadOnly: v.ReadOnly})
	}

	return out
}

// resources are a component's requests and limits: configs'
// ComponentResources (the defaults validation checks limits against)
// under the config's own.
func resources(r *configs.ResourcesConfig, component string) k8s.Resources {
	def := configs.ComponentResources[component]
	out := k8s.Resources{Requests: map[string]string{"cpu": def["cpu"], "memory": def["memory"]}}
	if r == nil {
		return out
	}

	for k, v := range r.Requests {
		out.Requests[k] = fmt.Sprint(v)
	}

	if len(r.Limits) > 0 {
		out.Limits = map[string]string{}

		for k, v := range r.Limits {
			out.Limits[k] = fmt.Sprint(v)
		}
	}

	return out
}

// ComponentConfigs are the three control-plane components' configs of a
// control-plane node, by ID.
func ComponentConfigs(cfg *configs.Config) (map[string]k8s.ComponentConfigSpec, error) {
	cl, err := ClusterFrom(cfg)
	if err != nil {
		return nil, err
	}

	c := cfg.Cluster
	out := map[string]k8s.ComponentConfigSpec{}

	api := k8s.ComponentConfigSpec{Image: images.APIServer(cl.Version).String(), Enabled: true,
		EtcdServers: []string{"https://127.0.0.1:2379"}, LocalPort: cl.LocalPort,
		ServiceCIDRs: cl.ServiceSubnets, PodCIDRs: cl.PodSubnets, ControlPlaneEndpoint: cl.Endpoint.String(),
		Resources: resources(nil, "apiServer")}

	if a := c.APIServer; a != nil {
		api.Image = cmp.Or(a.Image, api.Image)
		api.ExtraArgs = a.ExtraArgs.Clone()
		api.ExtraVolumes = volumes(a.ExtraVolumes)
		api.Env = maps.Clone(a.Env)
		api.Resources = resources(a.Resources, "apiServer")
	}

	apiServerDocuments(cfg, &api)

	out[k8s.APIServerID] = api

	cm := k8s.ComponentConfigSpec{Image: images.ControllerManager(cl.Version).String(), Enabled: true,
		ServiceCIDRs: cl.ServiceSubnets, PodCIDRs: cl.PodSubnets, Resources: resources(nil, "controllerManager")}

	if x := c.ControllerManager; x != nil {
		cm.Image = cmp.Or(x.Image, cm.Image)
		cm.ExtraArgs = x.ExtraArgs.Clone()
		cm.ExtraVolumes = volumes(x.ExtraVolumes)
		cm.Env = maps.Clone(x.Env)
		cm.Resources = resources(x.Resources, "controllerManager")
	}

	sch := k8s.ComponentConfigSpec{Image: images.Scheduler(cl.Version).String(), Enabled: true, Resources: resources(nil, "scheduler")}

	if x := c.Scheduler; x != nil {
		sch.Image = cmp.Or(x.Image, sch.Image)
		sch.ExtraArgs = x.ExtraArgs.Clone()
		sch.ExtraVolumes = volumes(x.ExtraVolumes)
		sch.Env = maps.Clone(x.Env)
		sch.Resources = resources(x.Resources, "scheduler")
	}

	if m := cfg.Machine; m != nil && m.ControlPlane != nil {
		if t := m.ControlPlane.ControllerManager; t != nil && t.Disabled {
			cm.Enabled = false
		}

		if t := m.ControlPlane.Scheduler; t != nil && t.Disabled {
			sch.Enabled = false
		}
	}

	out[k8s.ControllerManagerID] = cm
	out[k8s.SchedulerID] = sch

	return out, nil
}

// apiServerDocuments sets what the API server takes from the Kubernetes
// documents v1alpha1 has no field for: the service account issuers and
// audiences (KubeServiceAccountConfig), the structured authentication
// config (KubeAuthenticationConfig) and the probes (KubeAPIServerConfig).
func apiServerDocuments(cfg *configs.Config, api *k8s.ComponentConfigSpec) {
	if sa := configs.DocumentOf[*configs.KubeServiceAccountConfig](cfg); sa != nil {
		api.ServiceAccountIssuers = append([]string{sa.Issuer.IssuerURL}, sa.Accepted.Issuers...)
		api.APIAudiences = slices.Clone(sa.Accepted.Audiences)

		if len(api.APIAudiences) == 0 {
			api.APIAudiences = []string{sa.Issuer.IssuerURL}
		}
	}

	api.UseAuthenticationConfig = configs.AuthenticationConfiguration(cfg) != nil

	// The probes are anonymous requests: they need the authentication
	// config to let anonymous requests reach the health endpoints.
	if d := configs.DocumentOf[*configs.KubeAPIServerConfig](cfg); d != nil && d.StartupProbesEnabled() {
		api.StartupProbesEnabled = configs.AnonymousHealthChecks(cfg)
	}
}
