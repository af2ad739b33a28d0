package templates

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/talosbox/talosbox/configs"
)

// templateData is what the templates see. Every value a user controls is
// either validated here or written through the json function, so a config
// value can never change the YAML's structure.
type templateData struct {
	TokenID, TokenSecret string
	// Server is what kube-proxy's in-cluster kubeconfig names.
	Server string
	// KubePrismPort, when not 0, points flannel at KubePrism.
	KubePrismPort int
	DNSDomain     string
	DNSServiceIPs []dnsIP

	ProxyImage string
	ProxyArgs  []string
	// ProxyConfig is kube-proxy's configuration file (JSON), "" when it
	// runs from flags; ProxyConfigChecksum rolls its pods when it changes.
	ProxyConfig         string
	ProxyConfigChecksum string
	ProxyResources      Resources

	CoreDNSImage string

	FlannelImage     string
	FlannelArgs      []string
	FlannelCNIConf   string
	FlannelNetConf   string
	FlannelResources Resources
}

type dnsIP struct{ IP, Family string }

// A bootstrap token is "[a-z0-9]{6}.[a-z0-9]{16}" (the kube-apiserver's
// bootstrap authenticator accepts nothing else).
var bootstrapToken = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// deniedProxyArgs are the kube-proxy flags Talos sets itself and refuses
// from cluster.proxy.extraArgs: the kubeconfig is the in-cluster one.
var deniedProxyArgs = []string{"kubeconfig"}

// nftablesSince is the first kube-proxy minor whose default mode is
// nftables in Talos (kube-proxy's nftables mode went GA in 1.31).
const nftablesSince = 31

func newTemplateData(o Options) (*templateData, error) {
	defaultImages(&o)

	m := bootstrapToken.FindStringSubmatch(o.BootstrapToken)
	if m == nil {
		return nil, fmt.Errorf("cluster.token: want <6 of [a-z0-9]>.<16 of [a-z0-9]>, got %d characters", len(o.BootstrapToken))
	}

	if err := checkServer(o.Server); err != nil {
		return nil, err
	}

	d := &templateData{
		TokenID: m[1], TokenSecret: m[2], Server: o.Server, KubePrismPort: o.KubePrismPort,
		DNSDomain:    orDefault(o.DNSDomain, defaultDNSDomain),
		ProxyImage:   o.ProxyImage,
		CoreDNSImage: o.CoreDNSImage,
		FlannelImage: o.FlannelImage,
		FlannelArgs:  append([]string{"--ip-masq", "--kube-subnet-mgr"}, o.FlannelExtraArgs...),
	}

	if o.KubePrismPort != 0 {
		if o.KubePrismPort < 1 || o.KubePrismPort > 65535 {
			return nil, fmt.Errorf("machine.features.kubePrism.port: %d is not a port", o.KubePrismPort)
		}

		d.Server = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(o.KubePrismPort))
	}

	// The domain goes into the Corefile unquoted: configs' rule holds it
	// to the characters a domain may have.
	if err := configs.CheckDNSDomain(d.DNSDomain); err != nil {
		return nil, fmt.Errorf("cluster.network.dnsDomain: %w", err)
	}

	pods := o.PodSubnets
	if len(pods) == 0 {
		pods = []string{defaultPodSubnet}
	}

	for _, p := range pods {
		if _, err := netip.ParsePrefix(p); err != nil {
			return nil, fmt.Errorf("cluster.network.podSubnets: %w", err)
		}
	}

	if err := d.setDNSIPs(o); err != nil {
		return nil, err
	}

	var err error

	if o.ProxyConfig != nil {
		err = d.proxyConfigFile(o, pods)
	} else {
		d.ProxyArgs, err = proxyArgs(o, pods)
	}

	if err != nil {
		return nil, err
	}

	d.ProxyResources = o.ProxyResources

	if d.FlannelNetConf, err = flannelNetConf(pods, o.FlannelBackend); err != nil {
		return nil, err
	}

	d.FlannelResources = Resources{Requests: map[string]string{"cpu": "100m", "memory": "50Mi"}, Limits: o.FlannelResources.Limits}
	for k, v := range o.FlannelResources.Requests {
		d.FlannelResources.Requests[k] = v
	}

	d.FlannelCNIConf = flannelCNIConf

	return d, nil
}

func checkServer(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("cluster endpoint: %w", err)
	}

	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("cluster endpoint %q: want https://host:port", s)
	}

	return nil
}

func (d *templateData) setDNSIPs(o Options) error {
	ips := o.DNSServiceIPs
	if len(ips) == 0 {
		subnets := o.ServiceSubnets
		if len(subnets) == 0 {
			subnets = []string{defaultServiceSubnet}
		}

		var err error
		if ips, err = dnsServiceIPs(subnets); err != nil {
			return err
		}
	}

	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("DNS service IP: %w", err)
		}

		fam := "IPv4"
		if a.Is6() {
			fam = "IPv6"
		}

		if slices.ContainsFunc(d.DNSServiceIPs, func(x dnsIP) bool { return x.Family == fam }) {
			return fmt.Errorf("DNS service IPs %v: at most one per address family", ips)
		}

		d.DNSServiceIPs = append(d.DNSServiceIPs, dnsIP{IP: a.String(), Family: fam})
	}

	return nil
}

// proxyArgs are Talos's kube-proxy flags with cluster.proxy.extraArgs
// merged over them (an extra arg replaces a default of the same name),
// sorted by name as Talos's argument builder prints them.
func proxyArgs(o Options, pods []string) ([]string, error) {
	mode := o.ProxyMode
	if mode == "" {
		mode = defaultProxyMode(o.ProxyImage)
	}

	args := map[string]string{
		"cluster-cidr":           strings.Join(pods, ","),
		"conntrack-max-per-core": "0",
		"hostname-override":      "$(NODE_NAME)",
		"kubeconfig":             "/etc/kubernetes/kubeconfig",
		"proxy-mode":             mode,
	}

	return proxyFlags(args, o.ProxyExtraArgs, func(key, name string) error {
		if slices.Contains(deniedProxyArgs, name) {
			return fmt.Errorf("cluster.proxy.extraArgs: %q is set by talosbox and cannot be overridden", name)
		}

		if name == "" {
			return fmt.Errorf("cluster.proxy.extraArgs: empty flag name %q", key)
		}

		return nil
	})
}

// proxyFlags is kube-proxy's command line: the defaults with the extra
// args over them (leading dashes dropped from their names, check run on
// each first), sorted by name, a flag written once per value: a list
// repeats it in order, an empty one leaves it out.
func proxyFlags(defaults map[string]string, extra configs.Args, check func(key, name string) error) ([]string, error) {
	flags := make(map[string][]string, len(defaults)+len(extra))
	for k, v := range defaults {
		flags[k] = []string{v}
	}

	for _, k := range extra.Names() {
		name := strings.TrimLeft(k, "-")
		if err := check(k, name); err != nil {
			return nil, err
		}

		flags[name] = extra.Values(k)
	}

	out := make([]string, 0, len(flags))

	for _, k := range slices.Sorted(maps.Keys(flags)) {
		for _, v := range flags[k] {
			out = append(out, "--"+k+"="+v)
		}
	}

	return out, nil
}

// proxyConfigPath is where kube-proxy reads its configuration file (the
// kube-proxy-config ConfigMap), as Talos mounts it.
const proxyConfigPath = "/var/lib/kube-proxy/config.conf"

// proxyConfigFile is kube-proxy run from a configuration file, as Talos
// does for a KubeProxyConfig: --config and --hostname-override, then the
// extra args; the configuration is the document's, with the in-cluster
// kubeconfig, and the cluster CIDR, mode and conntrack default wherever
// it leaves them out.
func (d *templateData) proxyConfigFile(o Options, pods []string) error {
	args, err := proxyFlags(map[string]string{"config": proxyConfigPath, "hostname-override": "$(NODE_NAME)"}, o.ProxyExtraArgs,
		func(key, name string) error {
			if name == "config" || name == "" {
				return fmt.Errorf("KubeProxyConfig.extraArgs: %q is set by talosbox and cannot be overridden", key)
			}

			return nil
		})
	if err != nil {
		return err
	}

	d.ProxyArgs = args

	c := deepCopy(o.ProxyConfig)
	c["apiVersion"], c["kind"] = "kubeproxy.config.k8s.io/v1alpha1", "KubeProxyConfiguration"

	cc, _ := c["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}

	cc["kubeconfig"] = "/etc/kubernetes/kubeconfig"
	c["clientConnection"] = cc

	if _, ok := c["clusterCIDR"]; !ok {
		c["clusterCIDR"] = strings.Join(pods, ",")
	}

	if _, ok := c["mode"]; !ok {
		mode := o.ProxyMode
		if mode == "" {
			mode = defaultProxyMode(o.ProxyImage)
		}

		c["mode"] = mode
	}

	ct, _ := c["conntrack"].(map[string]any)
	if ct == nil {
		ct = map[string]any{}
	}

	if _, ok := ct["maxPerCore"]; !ok {
		ct["maxPerCore"] = 0
	}

	c["conntrack"] = ct

	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("kube-proxy configuration: %w", err)
	}

	sum := sha256.Sum256(b)
	d.ProxyConfig, d.ProxyConfigChecksum = string(b), hex.EncodeToString(sum[:])

	return nil
}

// deepCopy copies a free-form configuration, so defaults filled in never
// change the config it came from.
func deepCopy(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		return map[string]any{}
	}

	var out map[string]any
	if json.Unmarshal(b, &out) != nil || out == nil {
		return map[string]any{}
	}

	return out
}

var imageVersion = regexp.MustCompile(`:v?(\d+)\.(\d+)(\.\d+)?[^:/]*$`)

// defaultProxyMode is nftables for kube-proxy 1.31 and later and iptables
// before, judged by the image tag; an image without a version tag gets
// nftables, as everything talosbox ships is newer than 1.31.
func defaultProxyMode(image string) string {
	m := imageVersion.FindStringSubmatch(image)
	if m == nil {
		return "nftables"
	}

	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])

	if major == 1 && minor < nftablesSince {
		return "iptables"
	}

	return "nftables"
}

// flannelCNIConf is the conflist the install init container writes to
// /etc/cni/net.d: flannel (delegating to bridge) then portmap for
// hostPort, exactly as Talos ships it.
const flannelCNIConf = `{
  "name": "cbr0",
  "cniVersion": "1.0.0",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}`

// flannelNetConf is flanneld's net-conf.json: the first pod subnet of each
// family, vxlan on the IANA port and nftables, as Talos 1.11 renders it.
func flannelNetConf(pods []string, backend map[string]any) (string, error) {
	type netConf struct {
		Network        string         `json:"Network,omitempty"`
		IPv6Network    string         `json:"IPv6Network,omitempty"`
		EnableIPv6     *bool          `json:"EnableIPv6,omitempty"`
		EnableIPv4     *bool          `json:"EnableIPv4,omitempty"`
		EnableNFTables bool           `json:"EnableNFTables"`
		Backend        map[string]any `json:"Backend"`
	}

	yes, no := true, false
	nc := netConf{EnableNFTables: true, Backend: map[string]any{"Type": "vxlan", "Port": 4789}}
	if backend != nil {
		nc.Backend = backend
	}

	for _, p := range pods {
		pfx := netip.MustParsePrefix(p) // checked by newTemplateData
		switch {
		case pfx.Addr().Is4() && nc.Network == "":
			nc.Network = pfx.String()
		case pfx.Addr().Is6() && nc.IPv6Network == "":
			nc.IPv6Network, nc.EnableIPv6 = pfx.String(), &yes
		}
	}

	if nc.Network == "" {
		nc.EnableIPv4 = &no
	}

	b, err := json.MarshalIndent(nc, "", "  ")
	if err != nil {
		return "", fmt.Errorf("flannel net-conf.json: %w", err)
	}

	return string(b), nil
}

// funcs are the template helpers: json quotes any value as a JSON (and so
// YAML flow) scalar; indent re-indents a multi-line block for a YAML
// literal.
var funcs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)

		return string(b), err
	},
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)

		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	},
}

func execute(name, text string, d *templateData) ([]byte, error) {
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("bootstrap manifest template %s: %w", name, err)
	}

	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("bootstrap manifest template %s: %w", name, err)
	}

	return buf.Bytes(), nil
}
