package configs

import "net/url"

// DiscoveryServiceConfig is Talos's DiscoveryServiceConfig (written by gen
// config since Talos 1.14 in place of cluster.discovery): a discovery
// service the node registers with, named. It is cluster.discovery with
// the service registry at the first document's endpoint and, as Talos
// then has it, the Kubernetes registry off. talosbox's nodes find each
// other through their own registry on the control plane
// (internal/discovery) and talk to no discovery service yet, whichever
// way the endpoint is written. Talos refuses it alongside a v1alpha1
// cluster.discovery, and so does talosbox.
type DiscoveryServiceConfig struct {
	Name     string `yaml:"name"`
	Endpoint string `yaml:"endpoint"`
}

// Kind implements Document.
func (*DiscoveryServiceConfig) Kind() string { return "DiscoveryServiceConfig" }

// DocumentName implements NamedDocument.
func (d *DiscoveryServiceConfig) DocumentName() string { return d.Name }

func (d *DiscoveryServiceConfig) check(v *validator, path string) {
	if d.Name == "" {
		v.errorf(path+".name", "name is required: a name for the discovery service, such as default")
	}

	if d.Endpoint == "" {
		v.errorf(path+".endpoint", "endpoint is required: the discovery service's URL, such as https://discovery.talos.dev/")

		return
	}

	u, err := url.Parse(d.Endpoint)

	switch {
	case err != nil:
		v.errorf(path+".endpoint", "invalid endpoint %q: %v", d.Endpoint, unwrapURLError(err))
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "grpc":
		v.errorf(path+".endpoint", "endpoint %q: the scheme must be http://, https:// or grpc://", d.Endpoint)
	case u.Hostname() == "":
		v.errorf(path+".endpoint", "endpoint %q has no host", d.Endpoint)
	}
}

func (d *DiscoveryServiceConfig) fold(f *folding) {
	if w := f.written.Cluster; w != nil && w.Discovery != nil {
		f.conflict("", "cluster.discovery", "the discovery service")

		return
	}

	c := f.cluster()
	if c.Discovery == nil {
		c.Discovery = &DiscoveryConfig{Registries: &DiscoveryRegistries{Kubernetes: &DisabledToggle{Disabled: true}}}
		f.alias("cluster.discovery", "")
	}

	c.Discovery.Enabled = true

	// The v1alpha1 field holds one endpoint: the first document's, as
	// Talos reports the first one in its legacy fields. Talos reaches
	// the service at its host and port only, grpc:// as https://.
	if r := c.Discovery.Registries; r.Service == nil {
		if u, err := url.Parse(d.Endpoint); err == nil && u.Hostname() != "" {
			scheme := "https"
			if u.Scheme == "http" {
				scheme = "http"
			}

			r.Service = &DiscoveryServiceRegistry{Endpoint: scheme + "://" + u.Host + "/"}
			f.alias("cluster.discovery.registries.service", "endpoint")
		}
	}
}
