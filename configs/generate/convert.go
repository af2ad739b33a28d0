package generate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
)

// ToKubernetesDocuments is cfg with its Kubernetes settings moved from
// the v1alpha1 document (the cluster section's Kubernetes parts,
// machine.kubelet, the node's labels and taints, KubePrism, Talos API
// access, static pods) into the documents Talos 1.14 reads instead
// (KubeClusterConfig, KubeletConfig, KubeAPIServerConfig, ...): the shape
// `gen config --talos-version v1.14` writes, for a node or cluster made
// before. The node runs the same cluster with it, except for what Talos
// 1.14's documents change: the API server authenticates with the
// structured authentication config (anonymous requests only to the health
// endpoints, which its probes need) and has probes, and the kubelet has
// no manifests directory. The encryption config keeps the providers the
// secrets made, so what the API server encrypted stays readable.
//
// What no document can say is refused, naming it: extraVolumes,
// extraMounts, an external cloud provider, a kubelet reading a manifests
// directory.
func ToKubernetesDocuments(cfg *configs.Config) (*configs.Config, error) {
	if cfg == nil || cfg.V1Alpha1() == nil || cfg.Machine == nil || cfg.Cluster == nil {
		return nil, errors.New("the config has no v1alpha1 document with machine and cluster sections")
	}

	for _, d := range cfg.Documents {
		if strings.HasPrefix(d.Kind(), "Kube") {
			return nil, fmt.Errorf("the config already has Kubernetes documents (%s)", d.Kind())
		}
	}

	// A copy of the v1alpha1 document as written, to take the settings
	// out of.
	data, err := configs.NewConfig(cfg.V1Alpha1()).Encode()
	if err != nil {
		return nil, err
	}

	v1, err := configs.Decode(data)
	if err != nil {
		return nil, err
	}

	if err := convertible(v1); err != nil {
		return nil, err
	}

	docs := kubernetesDocuments(v1, conversion)

	return configs.NewConfig(v1, append(slices.Clone(cfg.Documents), docs...)...), nil
}

// convertible refuses what no Kubernetes document can say.
func convertible(c *configs.Config) error {
	var refused []string

	cl, m := c.Cluster, c.Machine

	for path, vols := range map[string]int{
		"cluster.apiServer.extraVolumes":         lenOf(cl.APIServer, func(a *configs.APIServerConfig) int { return len(a.ExtraVolumes) }),
		"cluster.controllerManager.extraVolumes": lenOf(cl.ControllerManager, func(a *configs.ControllerManager) int { return len(a.ExtraVolumes) }),
		"cluster.scheduler.extraVolumes":         lenOf(cl.Scheduler, func(a *configs.SchedulerConfig) int { return len(a.ExtraVolumes) }),
		"machine.kubelet.extraMounts":            lenOf(m.Kubelet, func(k *configs.KubeletConfig) int { return len(k.ExtraMounts) }),
	} {
		if vols > 0 {
			refused = append(refused, path)
		}
	}

	if cl.ExternalCloudProvider != nil && cl.ExternalCloudProvider.Enabled {
		refused = append(refused, "cluster.externalCloudProvider")
	}

	if m.Kubelet != nil && !m.Kubelet.DisableManifestsDirectory {
		refused = append(refused, "machine.kubelet.disableManifestsDirectory (KubeletConfig's kubelet reads no manifests directory: set it true first)")
	}

	if len(refused) == 0 {
		return nil
	}

	slices.Sort(refused)

	return fmt.Errorf("no Kubernetes document says %s: the config keeps its v1alpha1 shape", strings.Join(refused, ", "))
}

func lenOf[T any](p *T, n func(*T) int) int {
	if p == nil {
		return 0
	}

	return n(p)
}

// The two makers of Kubernetes documents: gen config writes Talos 1.14's
// own; a conversion keeps what the config said before.
const (
	generated  = false
	conversion = true
)

// kubernetesDocuments are the Kubernetes documents of cfg's settings,
// which leave cfg (its v1alpha1 document): on every node the cluster,
// node, kubelet, network, API CA and KubePrism documents; on control
// planes the aggregator CA, admission, audit, authentication,
// authorization, encryption, service account, component, CNI and CoreDNS
// documents. A conversion also moves what gen config never writes
// (flags, resources, manifests, static pods, ...).
func kubernetesDocuments(cfg *configs.Config, convert bool) []configs.Document {
	m, cl := cfg.Machine, cfg.Cluster
	cp := cfg.IsControlPlane()

	if m.Kubelet == nil {
		m.Kubelet = &configs.KubeletConfig{}
	}

	if m.Features == nil {
		m.Features = &configs.FeaturesConfig{}
	}

	network := cl.Network
	if network == nil {
		network = &configs.ClusterNetworkConfig{}
	}

	docs := []configs.Document{
		&configs.KubeClusterConfig{ClusterName: cl.ClusterName, Endpoint: endpointOf(cl)},
		nodeDocument(cfg),
		kubeletDocument(m.Kubelet, convert),
		&configs.KubeNetworkConfig{
			DNSDomain:      or(network.DNSDomain, "cluster.local"),
			PodSubnets:     orList(network.PodSubnets, "10.244.0.0/16"),
			ServiceSubnets: orList(network.ServiceSubnets, "10.96.0.0/12"),
		},
		caDocument(cl, cp),
	}

	if cpc := m.Kubelet.CredentialProviderConfig; len(cpc) > 0 {
		docs = append(docs, &configs.KubeCredentialProviderConfig{Configuration: cpc})
	}

	if kp := m.Features.KubePrism; kp != nil && kp.Enabled != nil && *kp.Enabled {
		docs = append(docs, &configs.KubePrismConfig{Port: or(kp.Port, 7445)})
	}

	for _, im := range cl.InlineManifests {
		docs = append(docs, &configs.KubeInlineManifestConfig{Name: im.Name, Manifest: im.Contents})
	}

	for i, p := range m.Pods {
		docs = append(docs, &configs.KubeStaticPodConfig{Name: staticPodName(p, i), Pod: p})
	}

	if cp {
		docs = append(docs, controlPlaneDocuments(cfg, convert)...)
	}

	// What the documents say leaves the v1alpha1 document.
	m.Kubelet, m.NodeLabels, m.NodeAnnotations, m.NodeTaints, m.Pods = nil, nil, nil, nil, nil
	m.Features.KubePrism, m.Features.KubernetesTalosAPIAccess, m.ControlPlane = nil, nil, nil

	if *m.Features == (configs.FeaturesConfig{}) {
		m.Features = nil
	}

	cfg.Cluster = &configs.ClusterConfig{
		ID: cl.ID, Secret: cl.Secret, Token: cl.Token, Discovery: cl.Discovery, Etcd: cl.Etcd,
		AdminKubeconfig: cl.AdminKubeconfig, ManifestsPrune: cl.ManifestsPrune,
	}

	return docs
}

func endpointOf(cl *configs.ClusterConfig) string {
	if cl.ControlPlane == nil {
		return ""
	}

	return cl.ControlPlane.Endpoint
}

// nodeDocument is how the node registers: its labels and taints listed
// whole (v1alpha1 adds a control plane's role label and taint itself).
func nodeDocument(cfg *configs.Config) *configs.KubeNodeConfig {
	m, k := cfg.Machine, cfg.Machine.Kubelet
	node := &configs.KubeNodeConfig{
		Labels: maps.Clone(m.NodeLabels), Annotations: maps.Clone(m.NodeAnnotations), Taints: maps.Clone(m.NodeTaints),
	}

	if k.NodeIP != nil {
		node.NodeIP.ValidSubnets = slices.Clone(k.NodeIP.ValidSubnets)
	}

	if k.SkipNodeRegistration {
		node.SkipNodeRegistration = ptr(true)
	}

	if k.RegisterWithFQDN {
		node.RegisterWithFQDN = ptr(true)
	}

	if cfg.IsControlPlane() {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}

		// The control-plane label goes first, as Talos's generator lists it.
		node.Labels["node-role.kubernetes.io/control-plane"] = ""

		if !cfg.Cluster.AllowSchedulingOnControlPlanes {
			if node.Taints == nil {
				node.Taints = map[string]string{}
			}

			node.Taints["node-role.kubernetes.io/control-plane"] = "NoSchedule"
		}
	}

	return node
}

func kubeletDocument(k *configs.KubeletConfig, convert bool) *configs.KubeletConfigDoc {
	d := &configs.KubeletConfigDoc{Image: k.Image}

	if k.DefaultRuntimeSeccompProfileEnabled {
		d.DefaultRuntimeSeccompProfileEnabled = ptr(true)
	}

	if convert {
		d.Config, d.ExtraArgs, d.ClusterDNS = k.ExtraConfig, k.ExtraArgs, k.ClusterDNS
	}

	return d
}

// caDocument is the Kubernetes API CA: a control plane's issuing CA and
// accepted ones; a worker's trusted CAs, the current one first.
func caDocument(cl *configs.ClusterConfig, cp bool) *configs.KubeAPIServerCAConfig {
	ca := &configs.KubeAPIServerCAConfig{}

	var accepted []string
	for _, a := range cl.AcceptedCAs {
		accepted = append(accepted, string(a.Crt))
	}

	switch {
	case cl.CA == nil:
		ca.AcceptedCAs = accepted
	case cp:
		ca.IssuingCA = &configs.CertificateAndKey{Cert: string(cl.CA.Crt), Key: string(cl.CA.Key)}
		ca.AcceptedCAs = accepted
	default:
		ca.AcceptedCAs = append([]string{string(cl.CA.Crt)}, accepted...)
	}

	return ca
}

// staticPodName names a v1alpha1 static pod's document as Talos names
// such a pod: its namespace and name ("default" for either when missing),
// made unique by its index.
func staticPodName(pod configs.Unstructured, i int) string {
	name, namespace := "default", "default"

	if md, ok := pod["metadata"].(map[string]any); ok {
		if n, ok := md["name"].(string); ok && n != "" {
			name = n
		}

		if ns, ok := md["namespace"].(string); ok && ns != "" {
			namespace = ns
		}
	}

	return fmt.Sprintf("%s-%s-%d", namespace, name, i)
}

// controlPlaneDocuments are the Kubernetes documents of control planes.
func controlPlaneDocuments(cfg *configs.Config, convert bool) []configs.Document {
	cl, m := cfg.Cluster, cfg.Machine

	api := cl.APIServer
	if api == nil {
		api = &configs.APIServerConfig{}
	}

	var docs []configs.Document

	if a := cl.AggregatorCA; a != nil {
		docs = append(docs, &configs.KubeAggregatorCAConfig{IssuingCA: &configs.CertificateAndKey{Cert: string(a.Crt), Key: string(a.Key)}})
	}

	for _, p := range api.AdmissionControl {
		docs = append(docs, &configs.KubeAdmissionControlConfig{Name: p.Name, Configuration: p.Configuration})
	}

	if len(api.AuditPolicy) > 0 {
		docs = append(docs, &configs.KubeAuditPolicyConfig{Configuration: api.AuditPolicy})
	}

	docs = append(docs,
		&configs.KubeAuthenticationConfig{Configuration: configs.Unstructured{
			"anonymous": map[string]any{
				"conditions": []any{map[string]any{"path": "/livez"}, map[string]any{"path": "/readyz"}, map[string]any{"path": "/healthz"}},
				"enabled":    true,
			},
			"jwt": []any{},
		}},
		&configs.KubeAuthorizerConfig{Name: "node", Type: "Node"},
		&configs.KubeAuthorizerConfig{Name: "rbac", Type: "RBAC"},
		&configs.KubeEtcdEncryptionConfig{Config: encryptionConfig(cl, convert)},
	)

	if sa := cl.ServiceAccount; sa != nil {
		docs = append(docs, &configs.KubeServiceAccountConfig{Issuer: configs.KubeServiceAccountIssuer{PrivateKey: string(sa.Key), IssuerURL: endpointOf(cl)}})
	}

	apiDoc := &configs.KubeAPIServerConfig{Image: api.Image, CertExtraSANs: api.CertSANs}
	if convert {
		apiDoc.ExtraArgs, apiDoc.Env, apiDoc.Resources = api.ExtraArgs, api.Env, api.Resources

		if cl.ControlPlane != nil && cl.ControlPlane.LocalAPIServerPort != 0 {
			apiDoc.APIPort = ptr(cl.ControlPlane.LocalAPIServerPort)
		}
	}

	docs = append(docs, apiDoc, controllerManagerDocument(cl, m), schedulerDocument(cl, m), proxyDocument(cl))
	docs = append(docs, cniDocuments(cl)...)

	coreDNS := &configs.KubeCoreDNSConfig{Enabled: ptr(true)}
	if d := cl.CoreDNS; d != nil {
		coreDNS.Enabled, coreDNS.Image = ptr(!d.Disabled), d.Image
	}

	docs = append(docs, coreDNS)

	if a := m.Features.KubernetesTalosAPIAccess; a != nil && a.Enabled != nil && *a.Enabled {
		docs = append(docs, &configs.KubeTalosAPIAccessConfig{AllowedRoles: a.AllowedRoles, AllowedKubernetesNamespaces: a.AllowedKubernetesNamespaces})
	}

	for _, u := range cl.ExtraManifests {
		docs = append(docs, &configs.KubeExternalManifestConfig{Name: manifestName(u), URL: u, Headers: cl.ExtraManifestHeaders})
	}

	return docs
}

func controllerManagerDocument(cl *configs.ClusterConfig, m *configs.MachineConfig) *configs.KubeControllerManagerConfig {
	d := &configs.KubeControllerManagerConfig{}

	if c := cl.ControllerManager; c != nil {
		d.Image, d.ExtraArgs, d.Env, d.Resources = c.Image, c.ExtraArgs, c.Env, c.Resources
	}

	if mc := m.ControlPlane; mc != nil && mc.ControllerManager != nil && mc.ControllerManager.Disabled {
		d.Enabled = ptr(false)
	}

	return d
}

func schedulerDocument(cl *configs.ClusterConfig, m *configs.MachineConfig) *configs.KubeSchedulerConfig {
	d := &configs.KubeSchedulerConfig{}

	if c := cl.Scheduler; c != nil {
		d.Image, d.Config, d.ExtraArgs, d.Env, d.Resources = c.Image, c.Config, c.ExtraArgs, c.Env, c.Resources
	}

	if mc := m.ControlPlane; mc != nil && mc.Scheduler != nil && mc.Scheduler.Disabled {
		d.Enabled = ptr(false)
	}

	return d
}

func proxyDocument(cl *configs.ClusterConfig) *configs.KubeProxyConfig {
	d := &configs.KubeProxyConfig{}

	if p := cl.Proxy; p != nil {
		d.Image, d.Mode, d.ExtraArgs = p.Image, p.Mode, p.ExtraArgs

		if p.Disabled {
			d.Enabled = ptr(false)
		}
	}

	return d
}

// cniDocuments: flannel (the default) is a KubeFlannelCNIConfig; a custom
// CNI's manifests are KubeExternalManifestConfigs; none is no document.
func cniDocuments(cl *configs.ClusterConfig) []configs.Document {
	var cni *configs.CNIConfig
	if cl.Network != nil {
		cni = cl.Network.CNI
	}

	switch {
	case cni == nil || cni.Name == "" || cni.Name == "flannel":
		f := &configs.KubeFlannelCNIConfig{BackendType: "vxlan", BackendPort: 4789}
		if cni != nil && cni.Flannel != nil {
			f.ExtraArgs = cni.Flannel.ExtraArgs
		}

		return []configs.Document{f}
	case cni.Name == "custom":
		var docs []configs.Document

		for i, u := range cni.URLs {
			name := "custom-cni"
			if i > 0 {
				name = fmt.Sprintf("custom-cni-%d", i)
			}

			docs = append(docs, &configs.KubeExternalManifestConfig{Name: name, URL: u, Headers: cl.ExtraManifestHeaders})
		}

		return docs
	}

	return nil
}

// manifestName names a manifest by its URL's last path element, as a
// DNS subdomain.
func manifestName(u string) string {
	name := strings.ToLower(u[strings.LastIndex(u, "/")+1:])
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".yml")

	var b strings.Builder

	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}

	if out := strings.Trim(b.String(), "-."); out != "" {
		return out
	}

	return "manifest"
}

// encryptionConfig is the EncryptionConfiguration of the v1alpha1
// secrets: the providers, key names and order the node has written
// (internal/k8s/secrets.EncryptionConfig), so what the API server
// encrypted stays readable. A conversion keeps identity last, to read
// what was stored before encryption, as the node's own did; gen config
// writes what Talos's does, without it. (Talos writes the AES-CBC key
// under secretbox; it is aescbc here, as it was encrypted.)
func encryptionConfig(cl *configs.ClusterConfig, withIdentity bool) configs.Unstructured {
	var providers []any

	if cl.SecretboxEncryptionSecret != "" {
		providers = append(providers, map[string]any{"secretbox": map[string]any{
			"keys": []any{map[string]any{"name": "key2", "secret": cl.SecretboxEncryptionSecret}},
		}})
	}

	if cl.AESCBCEncryptionSecret != "" {
		providers = append(providers, map[string]any{"aescbc": map[string]any{
			"keys": []any{map[string]any{"name": "key1", "secret": cl.AESCBCEncryptionSecret}},
		}})
	}

	if withIdentity {
		providers = append(providers, map[string]any{"identity": map[string]any{}})
	}

	return configs.Unstructured{"resources": []any{map[string]any{"providers": providers, "resources": []any{"secrets"}}}}
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}

	return v
}

func orList(v []string, def string) []string {
	if len(v) == 0 {
		return []string{def}
	}

	return slices.Clone(v)
}
