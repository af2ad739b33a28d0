// Package templates renders the bootstrap manifests a talosbox control
// plane creates in its cluster (Talos's Manifest resources) as YAML text,
// from the cluster settings alone. It holds no Kubernetes client code, so
// talosctl can render them offline (validate --render); the manifests
// package parses the text into objects and applies them.
package templates

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/images"
)

// Options are the cluster settings the bootstrap manifests depend on, taken
// from the machine config (cluster.*).
type Options struct {
	// ClusterName is cluster.clusterName. Talos's manifests do not use
	// it (the in-cluster kubeconfig names its cluster "local"); it is
	// here so callers pass the whole cluster identity in one place.
	ClusterName string
	// Server is the cluster endpoint.
	Server string
	// KubePrismPort, when not 0, is the port of every node's KubePrism
	// (machine.features.kubePrism): the pods that reach the API server
	// without the service network (kube-proxy, flannel) use
	// https://127.0.0.1:<port> rather than Server, as in Talos.
	KubePrismPort int

	PodSubnets     []string // 10.244.0.0/16 when empty
	ServiceSubnets []string // 10.96.0.0/12 when empty
	DNSDomain      string   // cluster.local when empty
	// DNSServiceIPs are kube-dns's cluster IPs; the 10th address of
	// each service subnet (10.96.0.10) when empty.
	DNSServiceIPs []string
	// BootstrapToken is cluster.token, "<id>.<secret>".
	BootstrapToken string

	ProxyEnabled bool
	ProxyImage   string // images.Proxy(images.Kubernetes) when empty
	// ProxyMode is cluster.proxy.mode; "" is nftables for kube-proxy
	// 1.31 and later, iptables before.
	ProxyMode      string
	ProxyExtraArgs configs.Args

	CoreDNSEnabled bool
	CoreDNSImage   string // images.CoreDNSImage() when empty

	// ProxyConfig, when not nil, is the KubeProxyConfiguration kube-proxy
	// runs from (a KubeProxyConfig document's config), as Talos 1.14
	// runs it: --config, and the cluster CIDR, mode and conntrack
	// default filled in where it leaves them out.
	ProxyConfig map[string]any
	// ProxyResources are kube-proxy's requests and limits (none when
	// empty).
	ProxyResources Resources

	FlannelEnabled   bool
	FlannelImage     string // images.FlannelImage() when empty
	FlannelExtraArgs []string
	// FlannelBackend is net-conf.json's Backend (KubeFlannelCNIConfig's
	// backendType, backendPort, backendMTU and backendExtraConfig);
	// vxlan on port 4789 when nil.
	FlannelBackend map[string]any
	// FlannelResources are flanneld's requests and limits over its
	// default requests (100m CPU, 50Mi memory).
	FlannelResources Resources
}

// Resources are a container's requests and limits ("cpu": "100m").
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Text is one rendered bootstrap manifest: its ID and its objects as a
// multi-document YAML stream, as the templates wrote them.
type Text struct {
	ID   string
	YAML []byte
}

// The IDs of the bootstrap manifests, as Talos names them; they sort in
// the order Talos applies them.
const (
	IDBootstrapToken       = "00-kubelet-bootstrapping-token"
	IDCSRNodeBootstrap     = "01-csr-node-bootstrap"
	IDCSRApproverBinding   = "01-csr-approver-role-binding"
	IDCSRRenewalBinding    = "01-csr-renewal-role-binding"
	IDFlannel              = "05-flannel"
	IDKubeProxy            = "10-kube-proxy"
	IDKubeconfigInCluster  = "11-kube-config-in-cluster"
	IDTalosNodeRBAC        = "11-talos-node-rbac-template"
	IDCoreDNS              = "11-core-dns"
	IDCoreDNSService       = "11-core-dns-svc"
	defaultPodSubnet       = "10.244.0.0/16"
	defaultServiceSubnet   = "10.96.0.0/12"
	defaultDNSDomain       = "cluster.local"
	dnsServiceAddressIndex = 10
)

// Render writes the bootstrap manifests for o, sorted by ID. Components
// that are disabled are left out; the CSR bindings, the token, the
// in-cluster kubeconfig and the kube-dns Service are always there, as in
// Talos.
func Render(o Options) ([]Text, error) {
	d, err := newTemplateData(o)
	if err != nil {
		return nil, err
	}

	type part struct {
		id   string
		tmpl string
		on   bool
	}

	parts := []part{
		{IDBootstrapToken, bootstrapTokenTemplate, true},
		{IDCSRNodeBootstrap, csrNodeBootstrapTemplate, true},
		{IDCSRApproverBinding, csrApproverTemplate, true},
		{IDCSRRenewalBinding, csrRenewalTemplate, true},
		{IDFlannel, flannelTemplate, o.FlannelEnabled},
		{IDKubeProxy, kubeProxyTemplate, o.ProxyEnabled},
		{IDKubeconfigInCluster, kubeconfigInClusterTemplate, true},
		{IDTalosNodeRBAC, talosNodeRBACTemplate, true},
		{IDCoreDNS, coreDNSTemplate, o.CoreDNSEnabled},
		{IDCoreDNSService, coreDNSServiceTemplate, true},
	}

	var out []Text

	for _, p := range parts {
		if !p.on {
			continue
		}

		text, err := execute(p.id, p.tmpl, d)
		if err != nil {
			return nil, err
		}

		out = append(out, Text{ID: p.id, YAML: text})
	}

	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })

	return out, nil
}

// dnsServiceIPs are the 10th address of each service subnet (at most one
// per address family), Talos's default for kube-dns.
func dnsServiceIPs(subnets []string) ([]string, error) {
	var out []string

	seen := map[bool]bool{}

	for _, s := range subnets {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("cluster.network.serviceSubnets: %w", err)
		}

		if seen[p.Addr().Is4()] {
			continue
		}

		seen[p.Addr().Is4()] = true

		a := p.Masked().Addr()
		for range dnsServiceAddressIndex {
			a = a.Next()
		}

		if !p.Contains(a) {
			return nil, fmt.Errorf("cluster.network.serviceSubnets: %s is too small for the DNS service address", p)
		}

		out = append(out, a.String())
	}

	return out, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}

	return s
}

func defaultImages(o *Options) {
	o.ProxyImage = orDefault(o.ProxyImage, images.Proxy(images.Kubernetes).String())
	o.CoreDNSImage = orDefault(o.CoreDNSImage, images.CoreDNSImage().String())
	o.FlannelImage = orDefault(o.FlannelImage, images.FlannelImage().String())
}
