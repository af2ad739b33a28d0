package configs

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

var (
	cniNames   = []string{"flannel", "custom", "none"}
	proxyModes = []string{"iptables", "ipvs", "nftables"}
)

func (v *validator) cluster(c *ClusterConfig) {
	const p = "cluster"

	v.endpoint(c.ControlPlane)

	// A control plane names the cluster in the kubeconfigs it issues.
	// Talos never required it (its 1.3 to 1.7 workers have none): a worker
	// only uses it for its default hostname, which falls back to "talos"
	// (render.DefaultHostname), and its kubelet's bootstrap kubeconfig
	// names the cluster "local" whatever it is.
	if strings.TrimSpace(c.ClusterName) == "" && v.controlPlane() {
		v.errorf(p+".clusterName", "cluster name is required (.cluster.clusterName)")
	}

	// Talos takes the ID as an opaque string (it does not validate it);
	// one that is not what gen config makes is likely cut short, but the
	// discovery service would still key the cluster by it.
	if c.ID != "" {
		if err := checkDecodedKey("cluster id", c.ID, DecodeBase64, 32); err != nil {
			v.warnf(p+".id", "%v (std or URL-safe alphabet), as talosctl gen config makes it", err)
		}
	}

	// The secret is the key affiliates are encrypted with (AES-GCM).
	if c.Secret != "" {
		v.check(p+".secret", checkDecodedKey("cluster secret", c.Secret, DecodeBase64, 16, 24, 32))
	}

	switch {
	case c.Token == "":
		v.errorf(p+".token", "cluster bootstrap token is required (.cluster.token)")
	case !tokenPattern().MatchString(c.Token):
		v.errorf(p+".token", "invalid bootstrap token (expected [a-z0-9]{6}.[a-z0-9]{16})")
	}

	if c.SecretboxEncryptionSecret != "" {
		v.check(p+".secretboxEncryptionSecret", checkBase64Key("secretbox encryption secret", c.SecretboxEncryptionSecret, 32))
	}

	if c.AESCBCEncryptionSecret != "" {
		v.check(p+".aescbcEncryptionSecret", checkBase64Key("aescbc encryption secret", c.AESCBCEncryptionSecret, 16, 24, 32))
	}

	// A KubeEtcdEncryptionConfig says the whole encryption config instead.
	if v.controlPlane() && c.SecretboxEncryptionSecret == "" && c.AESCBCEncryptionSecret == "" && DocumentOf[*KubeEtcdEncryptionConfig](v.cfg) == nil {
		v.errorf(p+".secretboxEncryptionSecret", "an encryption secret is required for controlplane nodes (.cluster.secretboxEncryptionSecret or .cluster.aescbcEncryptionSecret)")
	}

	v.clusterNetwork(c.Network)
	v.podAndServiceSubnets(c)
	v.clusterSecrets(c)

	for i, ca := range c.AcceptedCAs {
		v.acceptedCA(indexPath(p+".acceptedCAs", i), ca.Crt)
	}

	v.controlPlaneComponents(c)
	v.manifests(c)
}

func (v *validator) endpoint(cp *ControlPlaneConfig) {
	const p = "cluster.controlPlane"

	if cp == nil || cp.Endpoint == "" {
		v.errorf(p+".endpoint", "cluster controlplane endpoint is required")

		return
	}

	if !hasScheme(cp.Endpoint) {
		v.errorf(p+".endpoint", "%q has no scheme: want https://HOST:PORT", cp.Endpoint)
	} else if fix := bracketIPv6(cp.Endpoint); fix != "" {
		v.errorf(p+".endpoint", "invalid controlplane endpoint %q: an IPv6 address in a URL goes in brackets: %s", cp.Endpoint, fix)
	} else if err := checkEndpoint(cp.Endpoint); err != nil {
		v.errorf(p+".endpoint", "invalid controlplane endpoint: %v", err)
	}

	if cp.LocalAPIServerPort != 0 {
		v.check(p+".localAPIServerPort", checkPort("local API server port", cp.LocalAPIServerPort))
	}
}

// checkEndpoint requires what kubelets and talosctl can dial: an https URL
// with a host and nothing after the port.
func checkEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return unwrapURLError(err)
	}

	switch {
	case u.Scheme != "https":
		return fmt.Errorf("scheme must be https, got %q", u.Scheme)
	case u.Hostname() == "":
		return errors.New("host is missing")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return errors.New("must not have a path, query or fragment")
	}

	if p := u.Port(); p != "" {
		return checkPortString(p)
	}

	return nil
}

func (v *validator) clusterNetwork(n *ClusterNetworkConfig) {
	if n == nil {
		return
	}

	const p = "cluster.network"

	if cni := n.CNI; cni != nil {
		switch {
		case !slices.Contains(cniNames, cni.Name):
			v.errorf(p+".cni.name", "unsupported CNI driver %q (expected flannel, custom or none)", cni.Name)
		case cni.Name == "custom" && len(cni.URLs) == 0:
			v.warnf(p+".cni.urls", "no manifest URLs for the custom CNI: install it yourself, or pods will not get networking")
		case cni.Name != "custom" && len(cni.URLs) > 0:
			v.errorf(p+".cni.urls", "manifest URLs are only allowed for the custom CNI, not %q", cni.Name)
		}

		if cni.Name != "flannel" && cni.Flannel != nil && len(cni.Flannel.ExtraArgs) > 0 {
			v.errorf(p+".cni.flannel.extraArgs", "flannel options apply only to the flannel CNI, not %q", cni.Name)
		}

		if cni.Flannel != nil {
			for i, a := range cni.Flannel.ExtraArgs {
				if !strings.HasPrefix(a, "-") {
					v.errorf(indexPath(p+".cni.flannel.extraArgs", i), "%q is not a flag: write each as --name=value (flanneld stops reading flags at the first word that is not one)", a)
				}
			}
		}

		for i, u := range cni.URLs {
			v.check(indexPath(p+".cni.urls", i), checkURL("CNI manifest URL", u, "http", "https"))
		}
	}

	if n.DNSDomain != "" {
		v.check(p+".dnsDomain", CheckDNSDomain(n.DNSDomain))
	}

}

// clusterSecrets checks which CA keys a node may hold: control-plane nodes
// need them all, workers must not carry any.
func (v *validator) clusterSecrets(c *ClusterConfig) {
	type secret struct {
		path, name string
		crt        Base64
		hasCrt     bool
		key        Base64
	}

	secrets := []secret{
		{path: "cluster.ca", name: "kubernetes CA", hasCrt: true},
		{path: "cluster.aggregatorCA", name: "aggregator CA", hasCrt: true},
		{path: "cluster.serviceAccount", name: "service account"},
	}

	if c.CA != nil {
		secrets[0].crt, secrets[0].key = c.CA.Crt, c.CA.Key
	}

	if c.AggregatorCA != nil {
		secrets[1].crt, secrets[1].key = c.AggregatorCA.Crt, c.AggregatorCA.Key
	}

	if c.ServiceAccount != nil {
		secrets[2].key = c.ServiceAccount.Key
	}

	if c.Etcd != nil || v.controlPlane() {
		etcd := secret{path: "cluster.etcd.ca", name: "etcd CA", hasCrt: true}
		if c.Etcd != nil && c.Etcd.CA != nil {
			etcd.crt, etcd.key = c.Etcd.CA.Crt, c.Etcd.CA.Key
		}

		secrets = append(secrets, etcd)
	}

	worker := v.cfg.Machine != nil && MachineTypeOf(v.cfg.Machine.Type) == MachineTypeWorker

	for _, s := range secrets {
		switch {
		case v.controlPlane():
			if s.hasCrt && len(s.crt) == 0 {
				v.errorf(s.path+".crt", "%s certificate is required for controlplane nodes (.%s.crt)", s.name, s.path)
			}

			if len(s.key) == 0 {
				v.errorf(s.path+".key", "%s key is required for controlplane nodes (.%s.key)", s.name, s.path)
			}
		case worker && len(s.key) > 0:
			if s.path == "cluster.ca" {
				v.errorf(s.path+".key", "cluster CA key is not allowed on non-controlplane nodes (.cluster.ca)")
			} else {
				v.errorf(s.path+".key", "%s key is not allowed on non-controlplane nodes (.%s)", s.name, s.path)
			}
		}

		if s.hasCrt {
			v.caPair(s.path, &PEMCertificateAndKey{Crt: s.crt, Key: s.key})
		} else {
			v.serviceAccountKey(s.path+".key", s.key)
		}
	}

	if worker && (c.CA == nil || len(c.CA.Crt) == 0) {
		v.errorf("cluster.ca.crt", "kubernetes CA certificate is required (.cluster.ca.crt)")
	}

	if worker && c.Etcd != nil {
		v.errorf("cluster.etcd", "etcd config is only allowed on control plane machines")
	}
}

func (v *validator) controlPlaneComponents(c *ClusterConfig) {
	if a := c.APIServer; a != nil {
		v.image("cluster.apiServer.image", a.Image)

		for i, san := range a.CertSANs {
			v.check(indexPath("cluster.apiServer.certSANs", i), checkSAN(san))
		}

		v.volumes("cluster.apiServer.extraVolumes", a.ExtraVolumes)
		v.componentEnv("cluster.apiServer.env", a.Env)

		plugins := map[string]int{}

		for i, plugin := range a.AdmissionControl {
			pp := indexPath("cluster.apiServer.admissionControl", i) + ".name"

			switch j, dup := plugins[plugin.Name]; {
			case plugin.Name == "":
				v.errorf(pp, "admission plugin name is required")
			case dup:
				v.errorf(pp, "admission plugin %q is configured twice (also admissionControl[%d]): kube-apiserver refuses that", plugin.Name, j)
			}

			plugins[plugin.Name] = i
		}

		if a.DisablePodSecurityPolicy {
			v.warnf("cluster.apiServer.disablePodSecurityPolicy", "has no effect: PodSecurityPolicy was removed in Kubernetes 1.25")
		}
	}

	if cm := c.ControllerManager; cm != nil {
		v.image("cluster.controllerManager.image", cm.Image)
		v.volumes("cluster.controllerManager.extraVolumes", cm.ExtraVolumes)
		v.componentEnv("cluster.controllerManager.env", cm.Env)
	}

	if s := c.Scheduler; s != nil {
		v.image("cluster.scheduler.image", s.Image)
		v.volumes("cluster.scheduler.extraVolumes", s.ExtraVolumes)
		v.componentEnv("cluster.scheduler.env", s.Env)
	}

	if px := c.Proxy; px != nil {
		v.image("cluster.proxy.image", px.Image)

		if px.Mode != "" && !slices.Contains(proxyModes, px.Mode) {
			v.errorf("cluster.proxy.mode", "unsupported kube-proxy mode %q (expected iptables, ipvs or nftables)", px.Mode)
		}
	}

	if e := c.Etcd; e != nil {
		v.image("cluster.etcd.image", e.Image)
		v.etcdExtraArgs(e.ExtraArgs)

		for i, s := range e.AdvertisedSubnets {
			if _, err := ParseSubnetOrAddress(strings.TrimSpace(strings.TrimPrefix(s, "!"))); err != nil {
				v.errorf(indexPath("cluster.etcd.advertisedSubnets", i), "invalid subnet %q: a CIDR or an IP address, with an optional leading !", s)
			}
		}

		for i, s := range e.ListenSubnets {
			if _, err := ParseSubnetOrAddress(strings.TrimSpace(strings.TrimPrefix(s, "!"))); err != nil {
				v.errorf(indexPath("cluster.etcd.listenSubnets", i), "invalid subnet %q: a CIDR or an IP address, with an optional leading !", s)
			}
		}
	}

	if c.CoreDNS != nil {
		v.image("cluster.coreDNS.image", c.CoreDNS.Image)
	}

	v.discovery(c)

	if a := c.AdminKubeconfig; a != nil && a.CertLifetime < 0 {
		v.errorf("cluster.adminKubeconfig.certLifetime", "must not be negative")
	}
}

func (v *validator) image(p, image string) {
	if image != "" {
		v.check(p, checkImage(image))
	}
}

// volumes checks a control-plane component's extraVolumes: the pod the
// kubelet would refuse has two mounts at one path, and talosbox mounts the
// component's secrets and configs under /system (and the API server's
// audit log at kubeAuditDir) itself.
func (v *validator) volumes(p string, vols []VolumeMount) {
	seen := map[string]int{}

	for i, vol := range vols {
		vp := indexPath(p, i)
		v.check(vp+".hostPath", checkAbsPath("host path", vol.HostPath))

		if err := checkAbsPath("mount path", vol.MountPath); err != nil {
			v.errorf(vp+".mountPath", "%v", err)

			continue
		}

		mp := path.Clean(vol.MountPath)

		switch j, dup := seen[mp]; {
		case dup:
			v.errorf(vp+".mountPath", "%s is already mounted by %s: a pod cannot mount two volumes at one path", mp, indexPath(p, j))
		case mp == "/system" || strings.HasPrefix(mp, "/system/") || mp == kubeAuditDir && strings.HasPrefix(p, "cluster.apiServer"):
			v.errorf(vp+".mountPath", "%s is where talosbox mounts the component's own secrets, configs or audit log", mp)
		case mp == "/":
			v.errorf(vp+".mountPath", "a volume cannot be mounted over the container's root")
		}

		seen[mp] = i
	}
}

// kubeAuditDir is where the API server writes its audit log.
const kubeAuditDir = "/var/log/audit/kube"

// componentEnv checks a control-plane component's env names as the API
// server validates a pod's.
func (v *validator) componentEnv(p string, env map[string]string) {
	for _, k := range sortedKeys(env) {
		if !podEnvName().MatchString(k) {
			v.errorf(keyPath(p, k), "invalid environment variable name %q: letters, digits, '_', '-' and '.', not starting with a digit", k)
		}
	}
}

var podEnvName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`) })

func (v *validator) manifests(c *ClusterConfig) {
	for i, u := range c.ExtraManifests {
		v.check(indexPath("cluster.extraManifests", i), checkURL("manifest URL", u, "http", "https"))
	}

	for _, k := range sortedKeys(c.ExtraManifestHeaders) {
		if k == "" || strings.ContainsAny(k, " :\t\r\n") {
			v.errorf(keyPath("cluster.extraManifestHeaders", k), "invalid HTTP header name %q", k)
		}
	}

	if ecp := c.ExternalCloudProvider; ecp != nil {
		for i, u := range ecp.Manifests {
			v.check(indexPath("cluster.externalCloudProvider.manifests", i), checkURL("manifest URL", u, "http", "https"))
		}

		if !ecp.Enabled && len(ecp.Manifests) > 0 {
			v.errorf("cluster.externalCloudProvider.manifests", "external cloud provider is disabled, but manifests are provided (set enabled: true, or remove them)")
		}
	}

	names := map[string]bool{}

	for i, m := range c.InlineManifests {
		mp := indexPath("cluster.inlineManifests", i)

		switch {
		case strings.TrimSpace(m.Name) == "":
			v.errorf(mp+".name", "inline manifest name can't be empty")
		case names[m.Name]:
			v.errorf(mp+".name", "inline manifest name %q is duplicate", m.Name)
		}

		names[m.Name] = true

		if strings.TrimSpace(m.Contents) == "" {
			v.warnf(mp+".contents", "inline manifest %q is empty", m.Name)
		}
	}
}

// discovery checks cluster discovery and what depends on it.
func (v *validator) discovery(c *ClusterConfig) {
	const p = "cluster.discovery"

	d := c.Discovery
	if d == nil {
		d = &DiscoveryConfig{}
	}

	r := d.Registries
	if r == nil {
		r = &DiscoveryRegistries{}
	}

	if s := r.Service; s != nil && s.Endpoint != "" {
		if err := checkURL("discovery service endpoint", s.Endpoint, "https", "http"); err != nil {
			v.errorf(p+".registries.service.endpoint", "%v", err)
		} else if u, _ := url.Parse(s.Endpoint); u.Path != "" && u.Path != "/" {
			v.errorf(p+".registries.service.endpoint", "cluster discovery service path should be empty, got %q", u.Path)
		}
	}

	kubernetesOff := r.Kubernetes != nil && r.Kubernetes.Disabled
	serviceOff := r.Service != nil && r.Service.Disabled

	if d.Enabled && kubernetesOff && serviceOff {
		v.warnf(p, "discovery is enabled but every registry is disabled")
	}

	// Affiliates are encrypted with the cluster secret and keyed by the
	// cluster ID, on the service as in etcd.
	if d.Enabled && !serviceOff {
		if c.ID == "" {
			v.errorf("cluster.id", "cluster discovery service requires .cluster.id (or a DiscoveryIdentityConfig document)")
		}

		if c.Secret == "" {
			v.errorf("cluster.secret", "cluster discovery service requires .cluster.secret (or a DiscoveryIdentityConfig document)")
		}
	}

	if m := v.cfg.Machine; m != nil && m.Network != nil && m.Network.KubeSpan != nil && m.Network.KubeSpan.Enabled && !d.Enabled {
		v.errorf("machine.network.kubespan.enabled", "KubeSpan requires cluster discovery to be enabled (cluster.discovery.enabled: true): its peers come from discovery")
	}
}

// CheckDNSDomain is the rule for cluster.network.dnsDomain, the cluster's
// DNS domain the kubelets, CoreDNS and the bootstrap manifests use: a DNS
// name. As in Talos, a trailing dot and capitals are allowed: the node
// renders NormalizeDNSDomain of it. The manifests' renderer applies it too.
func CheckDNSDomain(s string) error {
	if why := dnsNameProblem(s); why != "" {
		return fmt.Errorf("invalid DNS domain %q: %s", s, why)
	}

	return nil
}

// NormalizeDNSDomain is the DNS domain as the node renders it (the
// kubelet's clusterDomain, CoreDNS's zone, the API server certificate's
// names): lowercase, without the trailing dot. The kubelet would otherwise
// write search domains ending in a dot, and no certificate name matches
// one.
func NormalizeDNSDomain(s string) string {
	return strings.ToLower(strings.TrimSuffix(s, "."))
}
