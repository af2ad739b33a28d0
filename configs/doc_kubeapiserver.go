package configs

import (
	"strings"
)

// KubeAPIServerConfig is Talos's KubeAPIServerConfig: the kube-apiserver
// static pod. Its image, flags, environment, resources and certificate
// SANs are cluster.apiServer's, its port
// cluster.controlPlane.localAPIServerPort. With it the API server is the
// one Talos 1.14 runs, which the node reads from the document: it
// authenticates with the structured authentication config
// (KubeAuthenticationConfig; --anonymous-auth=false without one), its
// authorizers are the KubeAuthorizerConfig documents alone (v1alpha1
// adds Node and RBAC), and it has startup, liveness and readiness probes
// unless startupProbes is false.
type KubeAPIServerConfig struct {
	Image         string            `yaml:"image"`
	ExtraArgs     Args              `yaml:"extraArgs,omitempty"`
	Env           map[string]string `yaml:"env,omitempty"`
	Resources     *ResourcesConfig  `yaml:"resources,omitempty"`
	APIPort       *int              `yaml:"apiPort,omitempty"`
	CertExtraSANs []string          `yaml:"certExtraSANs,omitempty"`
	StartupProbes *bool             `yaml:"startupProbes,omitempty"`
}

// Kind implements Document.
func (*KubeAPIServerConfig) Kind() string { return "KubeAPIServerConfig" }

// apiServerDocDenied are the flag prefixes a KubeAPIServerConfig may not
// set, and the document that says it instead (Talos's list).
var apiServerDocDenied = []struct{ prefix, use string }{
	{"anonymous-auth", "KubeAuthenticationConfig"},
	{"authentication-config", "KubeAuthenticationConfig"},
	{"authorization-config", "KubeAuthorizerConfig"},
	{"authorization-mode", "KubeAuthorizerConfig"},
	{"authorization-webhook-", "KubeAuthorizerConfig"},
	{"oidc-", "KubeAuthenticationConfig"},
}

// check: the image, flags, resources, SANs and port are checked where
// they are folded (cluster.apiServer, cluster.controlPlane).
func (k *KubeAPIServerConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	if k.Image == "" {
		v.requiredImage(path+".image", "kube-apiserver")
	}

	if k.StartupProbesEnabled() && !AnonymousHealthChecks(v.cfg) {
		v.warnf(path+".startupProbes", "the API server's probes are anonymous requests to /livez and /readyz, which no KubeAuthenticationConfig "+
			"lets through (anonymous enabled, with those paths): the node leaves the probes out; set startupProbes: false to say so")
	}

	for _, arg := range k.ExtraArgs.Names() {
		for _, d := range apiServerDocDenied {
			if strings.HasPrefix(arg, d.prefix) {
				v.errorf(keyPath(path+".extraArgs", arg), "kube-apiserver extra argument %q is not allowed: use %s", arg, d.use)
			}
		}
	}
}

func (k *KubeAPIServerConfig) fold(f *folding) {
	w := f.writtenCluster()

	if w.APIServer != nil {
		f.conflict("", "cluster.apiServer", "the kube-apiserver config")
	}

	if w.ControlPlane != nil && w.ControlPlane.LocalAPIServerPort != 0 {
		f.conflict("apiPort", "cluster.controlPlane.localAPIServerPort", "the kube-apiserver API port")
	}

	a := f.apiServer()
	a.Image = k.Image
	a.ExtraArgs = k.ExtraArgs.Clone()
	a.Env = cloneStrings(k.Env)
	a.Resources = cloneResources(k.Resources)
	a.CertSANs = append([]string(nil), k.CertExtraSANs...)

	f.alias("cluster.apiServer.image", "image")
	f.alias("cluster.apiServer.extraArgs", "extraArgs")
	f.alias("cluster.apiServer.env", "env")
	f.alias("cluster.apiServer.resources", "resources")
	f.alias("cluster.apiServer.certSANs", "certExtraSANs")

	if k.APIPort != nil {
		f.controlPlaneEndpoint().LocalAPIServerPort = *k.APIPort
		f.alias("cluster.controlPlane.localAPIServerPort", "apiPort")
	}
}

// StartupProbesEnabled reports whether the API server gets Talos's
// startup, liveness and readiness probes: on unless startupProbes is
// false.
func (k *KubeAPIServerConfig) StartupProbesEnabled() bool { return enabled(k.StartupProbes) }
