package render

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// How the kubelet reaches the runtime, and its config's API version.
const (
	containerRuntimeSocket  = "unix:///run/containerd/containerd.sock"
	kubeletConfigAPIVersion = "kubelet.config.k8s.io/v1beta1"
)

// KubeletInputs are what the kubelet's spec is made from besides the config.
type KubeletInputs struct {
	Nodename     string
	NodeIPs      []string
	StaticPodURL string
	// InContainer is a node in a container (Docker): the kernel's
	// defaults are the host's, not ours to protect.
	InContainer bool
}

// KubeletSpecFor renders the kubelet's command line and configuration.
func KubeletSpecFor(cfg *configs.Config, in KubeletInputs) (k8s.KubeletSpecSpec, error) {
	cl, err := ClusterFrom(cfg)
	if err != nil {
		return k8s.KubeletSpecSpec{}, err
	}

	k := cfg.Machine.Kubelet
	if k == nil {
		k = &configs.KubeletConfig{}
	}

	spec := k8s.KubeletSpecSpec{Image: cmp.Or(k.Image, images.Kubelet(cl.Version).String()), ExpectedNodename: in.Nodename}

	args := argSet{
		"bootstrap-kubeconfig": constants.KubeletBootstrapPath,
		"cert-dir":             constants.KubeletCertDir,
		"config":               constants.KubeletConfigPath,
		"hostname-override":    in.Nodename,
		"kubeconfig":           constants.KubeletKubeconfigPath,
	}

	if len(in.NodeIPs) > 0 {
		args["node-ip"] = strings.Join(in.NodeIPs, ",")
	}

	if k.SkipNodeRegistration {
		delete(args, "bootstrap-kubeconfig")
		delete(args, "kubeconfig")
	}

	if k.ExtraArgs.Has("hostname-override") {
		spec.ExpectedNodename = ""
	}

	if spec.Args, err = args.merge(k.ExtraArgs, kubeletPolicies, "machine.kubelet.extraArgs"); err != nil {
		return k8s.KubeletSpecSpec{}, err
	}

	for _, m := range k.ExtraMounts {
		spec.ExtraMounts = append(spec.ExtraMounts, k8s.Mount{Destination: m.Destination, Type: cmp.Or(m.Type, "bind"), Source: m.Source, Options: slices.Clone(m.Options)})
	}

	if spec.Config, err = kubeletConfiguration(cfg, k, cl, in); err != nil {
		return k8s.KubeletSpecSpec{}, err
	}

	return spec, nil
}

func kubeletConfiguration(cfg *configs.Config, k *configs.KubeletConfig, cl Cluster, in KubeletInputs) (map[string]any, error) {
	c := maps.Clone(map[string]any(k.ExtraConfig))
	if c == nil {
		c = map[string]any{}
	}

	for _, f := range configs.KubeletProtectedFields {
		if _, ok := c[f]; ok {
			return nil, fmt.Errorf("machine.kubelet.extraConfig.%s: the field is set by talosbox and may not be overridden", f)
		}
	}

	c["apiVersion"], c["kind"] = kubeletConfigAPIVersion, "KubeletConfiguration"
	c["staticPodPath"] = constants.ManifestsDir

	if k.DisableManifestsDirectory {
		delete(c, "staticPodPath")
	}

	if in.StaticPodURL != "" {
		c["staticPodURL"] = in.StaticPodURL
		// The kubelet starts before etcd is healthy and the control
		// plane's pods exist: at its default 20 s it read an empty list
		// first and found the pods up to 20 s later (17.6 s on the
		// critical path of cluster create, measured). A poll of the
		// loopback server costs a GET of a few KiB, compared byte for
		// byte with the last one; only a change is decoded.
		setDefaultIn(c, "httpCheckFrequency", StaticPodPollPeriod)
	}

	c["port"] = 10250
	c["authentication"] = map[string]any{
		"x509":      map[string]any{"clientCAFile": constants.KubeletCAPath},
		"webhook":   map[string]any{"enabled": true},
		"anonymous": map[string]any{"enabled": false},
	}
	c["authorization"] = map[string]any{"mode": "Webhook"}

	if k.SkipNodeRegistration {
		c["authentication"].(map[string]any)["webhook"] = map[string]any{"enabled": false} //nolint:forcetypeassert // set above
		c["authorization"] = map[string]any{"mode": "AlwaysAllow"}
	}

	c["cgroupRoot"] = "/"
	c["kubeletCgroups"] = "/podruntime/kubelet"

	if !in.InContainer {
		c["systemCgroups"] = "/system"
	}

	c["rotateCertificates"] = true
	c["protectKernelDefaults"] = !in.InContainer
	c["containerRuntimeEndpoint"] = containerRuntimeSocket
	c["resolvConf"] = constants.ResolvConfPath

	if k.DefaultRuntimeSeccompProfileEnabled {
		c["seccompDefault"] = true
	}

	if cfg.IsControlPlane() && (cfg.Cluster == nil || !cfg.Cluster.AllowSchedulingOnControlPlanes) {
		if !k.ExtraArgs.Has("register-with-taints") {
			taints, _ := c["registerWithTaints"].([]any)
			if !slices.ContainsFunc(taints, func(t any) bool { m, _ := t.(map[string]any); return m["key"] == constants.ControlPlaneTaint }) {
				taints = append(taints, map[string]any{"key": constants.ControlPlaneTaint, "effect": "NoSchedule"})
			}

			c["registerWithTaints"] = taints
		}
	}

	setDefault := func(key string, v any) {
		if _, ok := c[key]; !ok {
			c[key] = v
		}
	}

	setDefault("address", "0.0.0.0")
	setDefault("oomScoreAdj", -450)
	setDefault("clusterDomain", cl.DNSDomain)

	dns := k.ClusterDNS
	if len(dns) == 0 {
		ips, err := DNSServiceIPs(cl.ServiceSubnets)
		if err != nil {
			return nil, err
		}

		for _, ip := range ips {
			dns = append(dns, ip.String())
		}
	}

	setDefault("clusterDNS", toAny(dns))
	setDefault("serializeImagePulls", false)
	setDefault("failSwapOn", false)

	mem := "384Mi"
	if cfg.IsControlPlane() {
		mem = "512Mi"
	}

	setDefault("systemReserved", map[string]any{"cpu": "50m", "pid": "100", "ephemeral-storage": "256Mi", "memory": mem})
	setDefault("logging", map[string]any{"format": "json"})
	setDefault("streamingConnectionIdleTimeout", "5m0s")
	setDefault("tlsMinVersion", "VersionTLS13")

	return c, nil
}

// StaticPodPollPeriod is how often the kubelet asks machined for the static
// pods, unless machine.kubelet.extraConfig sets httpCheckFrequency.
const StaticPodPollPeriod = "1s"

func setDefaultIn(c map[string]any, key string, v any) {
	if _, ok := c[key]; !ok {
		c[key] = v
	}
}

// DNSServiceIPs are the cluster DNS service's addresses: the 10th IP of
// each service CIDR (10.96.0.10), as Talos and kubeadm pick it.
func DNSServiceIPs(serviceSubnets []string) ([]netip.Addr, error) {
	return nthIPs(serviceSubnets, 10)
}

// APIServerServiceIPs are the kubernetes service's addresses: the first
// IP of each service CIDR (10.96.0.1).
func APIServerServiceIPs(serviceSubnets []string) ([]netip.Addr, error) {
	return nthIPs(serviceSubnets, 1)
}

func nthIPs(subnets []string, n int) ([]netip.Addr, error) {
	var out []netip.Addr

	for _, s := range subnets {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("cluster.network.serviceSubnets: %q: %w", s, err)
		}

		a := p.Masked().Addr()
		for range n {
			a = a.Next()
		}

		if !p.Contains(a) {
			return nil, fmt.Errorf("cluster.network.serviceSubnets: %s is too small", s)
		}

		out = append(out, a)
	}

	return out, nil
}

// KubeletConfigYAML is the kubelet's configuration file (KubeletConfigPath)
// as the node writes it.
func KubeletConfigYAML(spec k8s.KubeletSpecSpec) ([]byte, error) {
	conf, err := yaml.Marshal(spec.Config)
	if err != nil {
		return nil, fmt.Errorf("kubelet config: %w", err)
	}

	return conf, nil
}

// KubeletServer is the API server the kubelet's bootstrap kubeconfig
// names. With KubePrism the kubelet goes through it, so that it reaches an
// API server while its own is down; without, control planes reach their
// own (one of their static pods) and workers the endpoint.
func KubeletServer(cfg *configs.Config) (string, error) {
	cl, err := ClusterFrom(cfg)
	if err != nil {
		return "", err
	}

	switch {
	case KubePrismPort(cfg) != 0:
		return fmt.Sprintf("https://127.0.0.1:%d", KubePrismPort(cfg)), nil
	case cfg.IsControlPlane():
		return fmt.Sprintf("https://localhost:%d", cl.LocalPort), nil
	}

	return cl.Endpoint.String(), nil
}

// KubeletCAs are the CAs the kubelet trusts for the API server and its
// clients: cluster.ca, then cluster.acceptedCAs.
func KubeletCAs(cfg *configs.Config) [][]byte {
	cas := [][]byte{}
	if cfg.Cluster.CA != nil {
		cas = append(cas, cfg.Cluster.CA.Crt)
	}

	for _, ca := range cfg.Cluster.AcceptedCAs {
		cas = append(cas, ca.Crt)
	}

	return cas
}

// KubeletCABundle is KubeletCAPath's content: the CAs one after another.
func KubeletCABundle(cas [][]byte) []byte {
	var bundle []byte
	for _, ca := range cas {
		bundle = append(bundle, ca...)
	}

	return bundle
}

// KubePrismPort is the port KubePrism listens on for cfg, 0 when it is
// off (no config, no cluster, or machine.features.kubePrism.enabled not
// true: generated configs turn it on, as Talos 1.6+ does).
func KubePrismPort(cfg *configs.Config) int {
	if cfg == nil || cfg.Cluster == nil || cfg.Machine == nil || cfg.Machine.Features == nil {
		return 0
	}

	kp := cfg.Machine.Features.KubePrism
	if kp == nil || kp.Enabled == nil || !*kp.Enabled {
		return 0
	}

	if kp.Port == 0 {
		return constants.KubePrismPort
	}

	return kp.Port
}
