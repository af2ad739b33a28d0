// Package generate builds the machine configs `talosctl gen config NAME
// ENDPOINT` writes: one for control-plane nodes and one for workers, both
// from the same secrets bundle so the nodes trust each other.
package generate

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/version"
)

// DefaultInstallImage is this version's installer (make installer), as
// Talos defaults to its own version's.
var DefaultInstallImage = "ghcr.io/talosbox/installer:" + version.Tag

// Defaults used for the zero values of Options.
const (
	DefaultKubernetesVersion = images.Kubernetes
	DefaultInstallDisk       = "/dev/sda"
)

// Options are the inputs of gen config. Only ClusterName and Endpoint are
// required.
type Options struct {
	ClusterName string
	// Endpoint is the Kubernetes API URL; a bare host or host:port gets
	// https:// and the default port added.
	Endpoint string
	// KubernetesVersion picks the control-plane and kubelet images, with or
	// without a leading "v".
	KubernetesVersion string
	InstallDisk       string
	InstallImage      string
	// NoInstallImage leaves machine.install.image out: the node then
	// installs no boot loader (no installer image can be had).
	NoInstallImage bool
	// AdditionalSANs go into the Talos API and Kubernetes API certificates.
	AdditionalSANs []string
	DNSDomain      string
	// RegistryMirrors maps a registry host ("docker.io", "*") to the URL of
	// a mirror, as --registry-mirror host=url gives them.
	RegistryMirrors map[string]string
	PodSubnets      []string
	ServiceSubnets  []string
	// Secrets is the bundle to use (gen config --with-secrets); a new one is
	// made when nil.
	Secrets *pki.Bundle
	// Now is the clock for a new bundle's certificates; time.Now when nil.
	Now func() time.Time
	// Contract is the Talos version to write for (ParseContract); the
	// zero value is Default.
	Contract Contract
}

// Output is the result of Generate.
type Output struct {
	ControlPlane *configs.Config
	Worker       *configs.Config
	// Secrets is the bundle both configs were made from, to be saved for
	// generating more configs of the same cluster later.
	Secrets *pki.Bundle
}

var kubernetesVersion = regexp.MustCompile(`^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$`)

// Generate builds the control-plane and worker configs. Both are checked with
// configs validation in metal mode before they are returned.
func Generate(opts Options) (*Output, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}

	bundle := opts.Secrets
	if bundle == nil {
		if bundle, err = pki.NewBundle(pki.BundleOptions{Now: opts.Now}); err != nil {
			return nil, fmt.Errorf("error generating secrets: %w", err)
		}
	}

	if err := oldEncryptionSecret(opts, bundle); err != nil {
		return nil, err
	}

	out := &Output{
		ControlPlane: build(opts, bundle, configs.MachineTypeControlPlane),
		Worker:       build(opts, bundle, configs.MachineTypeWorker),
		Secrets:      bundle,
	}

	for _, c := range []*configs.Config{out.ControlPlane, out.Worker} {
		if _, err := c.Validate(configs.ModeMetal); err != nil {
			return nil, fmt.Errorf("generated %s config is invalid: %w", c.Machine.Type, err)
		}
	}

	return out, nil
}

// oldEncryptionSecret gives a new bundle the AES-CBC secret Talos before
// v1.3 encrypts Kubernetes secrets with (it does not read the secretbox
// one), as Talos makes bundles for such versions. A bundle given with
// --with-secrets is the cluster's: a secret made up here would differ on
// every run, so one that lacks it is refused.
func oldEncryptionSecret(opts Options, b *pki.Bundle) error {
	if opts.Contract.secretbox() || b.Secrets.AESCBCEncryptionSecret != "" {
		return nil
	}

	if opts.Secrets != nil {
		return fmt.Errorf("talos version %s: the secrets bundle has no aescbcencryptionsecret, which Talos before v1.3 encrypts with: leave out the bundle to make a new one", opts.Contract)
	}

	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("error generating secrets: %w", err)
	}

	b.Secrets.AESCBCEncryptionSecret = base64.StdEncoding.EncodeToString(key)

	return nil
}

// withDefaults fills zero options and rejects the ones that cannot work.
func withDefaults(opts Options) (Options, error) {
	if strings.TrimSpace(opts.ClusterName) == "" {
		return opts, errors.New("cluster name is required")
	}

	endpoint, err := NormalizeEndpoint(opts.Endpoint)
	if err != nil {
		return opts, err
	}

	opts.Endpoint = endpoint

	if opts.Contract == (Contract{}) {
		opts.Contract = Default
	}

	if err := opts.Contract.check(); err != nil {
		return opts, fmt.Errorf("talos version %s: %w", opts.Contract, err)
	}

	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = DefaultKubernetesVersion
	}

	if !kubernetesVersion.MatchString(opts.KubernetesVersion) {
		return opts, fmt.Errorf("invalid Kubernetes version %q (expected X.Y.Z)", opts.KubernetesVersion)
	}

	opts.KubernetesVersion = strings.TrimPrefix(opts.KubernetesVersion, "v")

	setDefault(&opts.InstallDisk, DefaultInstallDisk)
	setDefault(&opts.InstallImage, DefaultInstallImage)

	if opts.NoInstallImage {
		opts.InstallImage = ""
	}
	setDefault(&opts.DNSDomain, constants.DefaultDNSDomain)

	if len(opts.PodSubnets) == 0 {
		opts.PodSubnets = []string{constants.DefaultPodSubnet}
	}

	if len(opts.ServiceSubnets) == 0 {
		opts.ServiceSubnets = []string{constants.DefaultServiceSubnet}
	}

	return opts, nil
}

func setDefault(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

// build makes the config of one machine type. The two types share all but
// the secrets: control-plane nodes get every CA key, workers only the CA
// certificates they need to trust the cluster. What depends on the Talos
// version is left to the contract (withContract), and so are the typed
// documents that take settings over from the v1alpha1 document
// (documents).
func build(opts Options, b *pki.Bundle, machineType string) *configs.Config {
	cp := machineType == configs.MachineTypeControlPlane
	version := "v" + opts.KubernetesVersion

	machine := &configs.MachineConfig{
		Type:     machineType,
		Token:    b.TrustdInfo.Token,
		CA:       caPair(b.Certs.OS, cp),
		CertSANs: slices.Clone(opts.AdditionalSANs),
		Kubelet: &configs.KubeletConfig{
			Image: images.Kubelet(version).String(),
		},
		Network: &configs.NetworkConfig{},
		Install: &configs.InstallConfig{
			Disk:  opts.InstallDisk,
			Image: opts.InstallImage,
		},
		Registries: registries(opts.RegistryMirrors),
		Features:   &configs.FeaturesConfig{RBAC: ptr(true)},
	}

	cluster := &configs.ClusterConfig{
		ID:           b.Cluster.ID,
		Secret:       b.Cluster.Secret,
		ControlPlane: &configs.ControlPlaneConfig{Endpoint: opts.Endpoint},
		ClusterName:  opts.ClusterName,
		Network: &configs.ClusterNetworkConfig{
			DNSDomain:      opts.DNSDomain,
			PodSubnets:     slices.Clone(opts.PodSubnets),
			ServiceSubnets: slices.Clone(opts.ServiceSubnets),
		},
		Token: b.Secrets.BootstrapToken,
		CA:    caPair(b.Certs.K8s, cp),
		Discovery: &configs.DiscoveryConfig{
			Enabled:    true,
			Registries: &configs.DiscoveryRegistries{Service: &configs.DiscoveryServiceRegistry{}},
		},
	}

	if cp {
		addControlPlane(cluster, opts, b, version)
	}

	cfg := &configs.Config{
		Version: configs.Version,
		Persist: true,
		Machine: machine,
		Cluster: cluster,
	}

	withContract(cfg, opts.Contract)

	return configs.NewConfig(cfg, documents(cfg, opts, b)...)
}

// withContract adds what the contract's Talos version generates by
// default, and takes out what it would not read.
func withContract(cfg *configs.Config, c Contract) {
	m, cl := cfg.Machine, cfg.Cluster
	cp := m.Type == configs.MachineTypeControlPlane

	if c.kubeletSeccompDefault() {
		m.Kubelet.DefaultRuntimeSeccompProfileEnabled = true
	}

	if c.kubeletManifestsOff() {
		m.Kubelet.DisableManifestsDirectory = true
	}

	f := m.Features
	if c.stableHostname() && !c.multidocNetwork() {
		f.StableHostname = ptr(true) // a HostnameConfig from v1.12
	}

	if c.apidExtKeyUsage() {
		f.APIDCheckExtKeyUsage = ptr(true)
	}

	if c.hideRBACAndKeyUsage() {
		f.RBAC, f.APIDCheckExtKeyUsage = nil, nil
	}

	if c.grubUseUKICmdline() {
		m.Install.GrubUseUKICmdline = ptr(true)
	}

	if c.noEmptyNetwork() {
		m.Network = nil
	}

	if c.diskQuota() {
		f.DiskQuotaSupport = ptr(true)
	}

	if c.kubePrism() {
		f.KubePrism = &configs.KubePrism{Enabled: ptr(true), Port: constants.KubePrismPort}
	}

	if c.hostDNS() {
		f.HostDNS = &configs.HostDNS{Enabled: ptr(true)}
		if c.forwardKubeDNSToHost() {
			f.HostDNS.ForwardKubeDNSToHost = ptr(true)
		}
	}

	if c.kubernetesDiscoveryOff() {
		// Talos turned the Kubernetes registry off by default: it leaks
		// member addresses into node annotations.
		cl.Discovery.Registries.Kubernetes = &configs.DisabledToggle{Disabled: true}
	}

	if !cp {
		return
	}

	if c.excludeFromLoadBalancers() {
		// Keeps external load balancers from sending traffic to control
		// plane nodes, as Talos does.
		m.NodeLabels = map[string]string{"node.kubernetes.io/exclude-from-external-load-balancers": ""}
	}

	if !c.secretbox() {
		cl.SecretboxEncryptionSecret = "" // the bundle's AES-CBC secret stays (oldEncryptionSecret)
	}

	if !c.podSecurityAdmission() {
		cl.APIServer.AdmissionControl = nil
	}

	if !c.auditPolicy() {
		cl.APIServer.AuditPolicy = nil
	}
}

func addControlPlane(c *configs.ClusterConfig, opts Options, b *pki.Bundle, version string) {
	c.SecretboxEncryptionSecret = b.Secrets.SecretboxEncryptionSecret
	c.AESCBCEncryptionSecret = b.Secrets.AESCBCEncryptionSecret
	c.AggregatorCA = caPair(b.Certs.K8sAggregator, true)
	c.ServiceAccount = &configs.PEMKey{Key: clone(b.Certs.K8sServiceAccount.Key)}
	c.APIServer = &configs.APIServerConfig{
		Image:            images.APIServer(version).String(),
		CertSANs:         apiServerSANs(opts, opts.Contract.endpointSANs()),
		AdmissionControl: defaultAdmissionControl(),
		AuditPolicy:      defaultAuditPolicy(),
	}
	c.ControllerManager = &configs.ControllerManager{Image: images.ControllerManager(version).String()}
	c.Proxy = &configs.ProxyConfig{Image: images.Proxy(version).String()}
	c.Scheduler = &configs.SchedulerConfig{Image: images.Scheduler(version).String()}
	c.Etcd = &configs.EtcdConfig{CA: caPair(b.Certs.Etcd, true)}
}

// apiServerSANs are the additional SANs, after the endpoint host where
// the contract writes it (the node puts it in the API certificate
// anyway, so that it is valid for the name clients dial).
func apiServerSANs(opts Options, withEndpoint bool) []string {
	var sans []string
	if withEndpoint {
		sans = append(sans, endpointHost(opts.Endpoint))
	}

	for _, s := range opts.AdditionalSANs {
		if !slices.Contains(sans, s) {
			sans = append(sans, s)
		}
	}

	return sans
}

func caPair(p pki.CertAndKey, withKey bool) *configs.PEMCertificateAndKey {
	out := &configs.PEMCertificateAndKey{Crt: clone(p.Crt)}
	if withKey {
		out.Key = clone(p.Key)
	}

	return out
}

// clone copies so that editing a config never changes the bundle.
func clone(b []byte) configs.Base64 {
	return configs.Base64(slices.Clone(b))
}

func registries(mirrors map[string]string) *configs.RegistriesConfig {
	if len(mirrors) == 0 {
		return nil
	}

	r := &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{}}

	for _, host := range slices.Sorted(maps.Keys(mirrors)) {
		r.Mirrors[host] = configs.RegistryMirror{Endpoints: []string{mirrors[host]}}
	}

	return r
}

func ptr[T any](v T) *T { return &v }
