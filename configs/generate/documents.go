package generate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/pki"
)

// documents are the typed documents cfg's contract writes, in Talos's
// order; the settings they take over leave cfg (the v1alpha1 document).
//
//   - v1.12: the registry mirrors (RegistryMirrorConfig) and the stable
//     hostname (HostnameConfig auto: stable).
//   - v1.14: the Kubernetes settings (kubernetesDocuments), and the
//     discovery, host DNS, install, EPHEMERAL volume, filesystem trim and
//     workload isolation documents, where talosbox reads their kind: for
//     a kind it does not implement yet, the v1alpha1 fields say what the
//     document would (discovery, host DNS, install), or nothing is written
//     (the others have no v1alpha1 field).
func documents(cfg *configs.Config, opts Options, b *pki.Bundle) []configs.Document {
	c := opts.Contract

	var docs []configs.Document

	if c.multidocKubernetes() {
		docs = append(docs, talos114Documents(cfg, opts, b)...)
	}

	if c.multidocNetwork() {
		if r := cfg.Machine.Registries; r != nil {
			for _, host := range slices.Sorted(maps.Keys(r.Mirrors)) {
				m := &configs.RegistryMirrorConfig{Name: host}
				for _, ep := range r.Mirrors[host].Endpoints {
					m.Endpoints = append(m.Endpoints, configs.RegistryEndpoint{URL: ep})
				}

				docs = append(docs, m)
			}

			cfg.Machine.Registries = nil
		}

		docs = append(docs, &configs.HostnameConfig{Auto: configs.AutoHostnameStable})
	}

	if c.multidocKubernetes() {
		docs = append(docs, kubernetesDocuments(cfg, opts)...)
	}

	return docs
}

// optionalDocument is one of the documents Talos 1.14 writes besides the
// Kubernetes ones: its text as Talos writes it, and the v1alpha1 fields
// it takes over, cleared when the document is written.
type optionalDocument struct {
	text  string
	clear func(*configs.Config)
}

// talos114Documents are the documents Talos 1.14 writes before the
// network and Kubernetes ones, those whose kind talosbox reads.
func talos114Documents(cfg *configs.Config, opts Options, b *pki.Bundle) []configs.Document {
	m := cfg.Machine

	list := []optionalDocument{
		{"kind: DiscoveryServiceConfig\nname: default\nendpoint: https://discovery.talos.dev/\n", func(c *configs.Config) { c.Cluster.Discovery = nil }},
		{fmt.Sprintf("kind: DiscoveryIdentityConfig\nclusterID: %s\nclusterSecret: %s\n", b.Cluster.ID, b.Cluster.Secret),
			func(c *configs.Config) { c.Cluster.ID, c.Cluster.Secret = "", "" }},
	}

	if m.Install != nil && m.Install.Disk != "" {
		list = append(list, optionalDocument{
			fmt.Sprintf("kind: UnattendedInstallConfig\ninstaller:\n  image: %q\nprovisioning:\n  diskSelector:\n    match: 'disk.dev_path == %q'\n  wipe: false\n",
				m.Install.Image, m.Install.Disk),
			func(c *configs.Config) { c.Machine.Install = nil },
		})
	}

	list = append(list,
		optionalDocument{"kind: ResolverConfig\nhostDNS:\n  enabled: true\n  forwardKubeDNSToHost: true\n", func(c *configs.Config) { c.Machine.Features.HostDNS = nil }},
		optionalDocument{"kind: VolumeConfig\nname: EPHEMERAL\nmount:\n  secure: true\n", nil},
		optionalDocument{"kind: FilesystemTrimConfig\ninterval: 168h0m0s\n", nil},
		optionalDocument{"kind: SecurityProfileConfig\nworkloadIsolation: true\n", nil},
	)

	var docs []configs.Document

	for _, o := range list {
		doc := decodeDocument(o.text)
		if doc == nil {
			continue
		}

		docs = append(docs, doc)

		if o.clear != nil {
			o.clear(cfg)
		}
	}

	return docs
}

// decodeDocument reads one typed document, nil when talosbox does not
// implement its kind.
func decodeDocument(text string) configs.Document {
	cfg, err := configs.Decode([]byte("apiVersion: " + configs.DocumentAPIVersion + "\n" + text))
	if err != nil || len(cfg.Documents) != 1 {
		return nil
	}

	return cfg.Documents[0]
}

// kubernetesDocuments are Talos 1.14's Kubernetes documents, made from
// the cluster section and machine.kubelet, which they replace: on every
// node the cluster, node, kubelet, network, API CA and KubePrism
// documents; on control planes the aggregator CA, admission, audit,
// authentication, authorization, encryption, service account, component
// and CNI and CoreDNS documents.
func kubernetesDocuments(cfg *configs.Config, opts Options) []configs.Document {
	m, cl := cfg.Machine, cfg.Cluster
	cp := m.Type == configs.MachineTypeControlPlane

	node := &configs.KubeNodeConfig{Labels: m.NodeLabels}
	if cp {
		node.Labels = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		if opts.Contract.excludeFromLoadBalancers() {
			node.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
		}

		node.Taints = map[string]string{"node-role.kubernetes.io/control-plane": "NoSchedule"}
	}

	docs := []configs.Document{
		&configs.KubeClusterConfig{ClusterName: cl.ClusterName, Endpoint: cl.ControlPlane.Endpoint},
		node,
		&configs.KubeletConfigDoc{Image: m.Kubelet.Image, DefaultRuntimeSeccompProfileEnabled: ptr(true)},
		&configs.KubeNetworkConfig{DNSDomain: cl.Network.DNSDomain, PodSubnets: cl.Network.PodSubnets, ServiceSubnets: cl.Network.ServiceSubnets},
	}

	ca := &configs.KubeAPIServerCAConfig{}
	if cp {
		ca.IssuingCA = &configs.CertificateAndKey{Cert: string(cl.CA.Crt), Key: string(cl.CA.Key)}
	} else {
		ca.AcceptedCAs = []string{string(cl.CA.Crt)}
	}

	docs = append(docs, ca)

	if kp := m.Features.KubePrism; kp != nil && kp.Enabled != nil && *kp.Enabled {
		docs = append(docs, &configs.KubePrismConfig{Port: kp.Port})
	}

	if cp {
		docs = append(docs, controlPlaneDocuments(cl)...)
	}

	// What the documents say leaves the v1alpha1 document.
	m.Kubelet, m.NodeLabels, m.Features.KubePrism = nil, nil, nil
	cfg.Cluster = &configs.ClusterConfig{ID: cl.ID, Secret: cl.Secret, Token: cl.Token, Discovery: cl.Discovery, Etcd: cl.Etcd}

	return docs
}

// controlPlaneDocuments are the Kubernetes documents of control planes.
func controlPlaneDocuments(cl *configs.ClusterConfig) []configs.Document {
	api := cl.APIServer
	docs := []configs.Document{
		&configs.KubeAggregatorCAConfig{IssuingCA: &configs.CertificateAndKey{Cert: string(cl.AggregatorCA.Crt), Key: string(cl.AggregatorCA.Key)}},
	}

	for _, p := range api.AdmissionControl {
		docs = append(docs, &configs.KubeAdmissionControlConfig{Name: p.Name, Configuration: p.Configuration})
	}

	docs = append(docs,
		&configs.KubeAuditPolicyConfig{Configuration: api.AuditPolicy},
		&configs.KubeAuthenticationConfig{Configuration: configs.Unstructured{
			"anonymous": map[string]any{
				"conditions": []any{map[string]any{"path": "/livez"}, map[string]any{"path": "/readyz"}, map[string]any{"path": "/healthz"}},
				"enabled":    true,
			},
			"jwt": []any{},
		}},
		&configs.KubeAuthorizerConfig{Name: "node", Type: "Node"},
		&configs.KubeAuthorizerConfig{Name: "rbac", Type: "RBAC"},
		&configs.KubeEtcdEncryptionConfig{Config: encryptionConfig(cl)},
		&configs.KubeServiceAccountConfig{Issuer: configs.KubeServiceAccountIssuer{
			PrivateKey: string(cl.ServiceAccount.Key), IssuerURL: cl.ControlPlane.Endpoint,
		}},
		&configs.KubeAPIServerConfig{Image: api.Image, CertExtraSANs: api.CertSANs},
		&configs.KubeControllerManagerConfig{Image: cl.ControllerManager.Image},
		&configs.KubeSchedulerConfig{Image: cl.Scheduler.Image},
		&configs.KubeProxyConfig{Image: cl.Proxy.Image},
		&configs.KubeFlannelCNIConfig{BackendType: "vxlan", BackendPort: 4789},
		&configs.KubeCoreDNSConfig{Enabled: ptr(true)},
	)

	return docs
}

// encryptionConfig is the EncryptionConfiguration the v1alpha1 secrets
// make (internal/k8s/secrets.EncryptionConfig), as Talos writes it for a
// cluster that moves to the document: the same providers, keys and names,
// so what the API server encrypted stays readable. (Talos writes the
// AES-CBC key under secretbox; it is aescbc here, as it was encrypted.)
func encryptionConfig(cl *configs.ClusterConfig) configs.Unstructured {
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

	return configs.Unstructured{"resources": []any{map[string]any{"providers": providers, "resources": []any{"secrets"}}}}
}
