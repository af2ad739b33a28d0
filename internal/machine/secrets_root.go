package machine

import (
	"context"
	"net/netip"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/secrets"
)

// RootSecretsController publishes the root material of the config in
// effect as Talos's secrets resources: OSRootSecrets (the Talos API CA,
// accepted CAs, certSANs and token), and on control planes
// EtcdRootSecrets and KubernetesRootSecrets. A worker's config holds no
// CA keys, so neither do its resources.
type RootSecretsController struct{}

// Name implements bus.Controller.
func (*RootSecretsController) Name() string { return "secrets.RootController" }

// Inputs implements bus.Controller.
func (*RootSecretsController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: config.NamespaceConfig, Type: config.MachineConfigType}}
}

// Outputs implements bus.Controller.
func (*RootSecretsController) Outputs() []bus.Output {
	return []bus.Output{{Type: secrets.OSRootType}, {Type: secrets.EtcdRootType}, {Type: secrets.KubernetesRootType}}
}

// Run implements bus.Controller.
func (c *RootSecretsController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		var cfg *configs.Config

		mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
		switch {
		case err == nil:
			cfg = mc.TypedSpec().Config
		case !bus.IsNotFound(err):
			return err
		}

		osRoot, etcd, k8s := map[string]secrets.OSRootSpec{}, map[string]secrets.EtcdRootSpec{}, map[string]secrets.KubernetesRootSpec{}

		if cfg != nil && cfg.Machine != nil && cfg.Machine.CA != nil {
			osRoot[secrets.OSRootID] = OSRootSpec(cfg)

			if cfg.IsControlPlane() && cfg.Cluster != nil {
				if cfg.Cluster.Etcd != nil && cfg.Cluster.Etcd.CA != nil {
					etcd[secrets.EtcdRootID] = secrets.EtcdRootSpec{EtcdCA: certAndKey(cfg.Cluster.Etcd.CA)}
				}

				k8s[secrets.KubernetesRootID] = KubernetesRootSpec(cfg)
			}
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), secrets.Namespace, secrets.OSRootType, osRoot); err != nil {
			return err
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), secrets.Namespace, secrets.EtcdRootType, etcd); err != nil {
			return err
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), secrets.Namespace, secrets.KubernetesRootType, k8s); err != nil {
			return err
		}
	}
}

// OSRootSpec is the Talos API's root material in cfg.
func OSRootSpec(cfg *configs.Config) secrets.OSRootSpec {
	spec := secrets.OSRootSpec{IssuingCA: certAndKey(cfg.Machine.CA), AcceptedCAs: certs(cfg.Machine.AcceptedCAs), Token: cfg.Machine.Token}

	for _, san := range cfg.Machine.CertSANs {
		if ip, err := netip.ParseAddr(san); err == nil {
			spec.CertSANIPs = append(spec.CertSANIPs, ip)
		} else {
			spec.CertSANDNSNames = append(spec.CertSANDNSNames, san)
		}
	}

	return spec
}

// KubernetesRootSpec is the cluster's Kubernetes root material in cfg.
func KubernetesRootSpec(cfg *configs.Config) secrets.KubernetesRootSpec {
	c := cfg.Cluster
	spec := secrets.KubernetesRootSpec{
		Name: c.ClusterName, IssuingCA: certAndKey(c.CA), AcceptedCAs: certs(c.AcceptedCAs), AggregatorCA: certAndKey(c.AggregatorCA),
		AESCBCEncryptionSecret: c.AESCBCEncryptionSecret, SecretboxEncryptionSecret: c.SecretboxEncryptionSecret,
		LocalEndpoint: "https://localhost:" + strconv.Itoa(cfg.LocalAPIServerPort()), DNSDomain: "cluster.local",
	}

	if c.ControlPlane != nil {
		spec.Endpoint = c.ControlPlane.Endpoint
	}

	if c.APIServer != nil {
		spec.CertSANs = c.APIServer.CertSANs
	}

	if c.Network != nil && c.Network.DNSDomain != "" {
		spec.DNSDomain = configs.NormalizeDNSDomain(c.Network.DNSDomain)
	}

	if c.ServiceAccount != nil {
		spec.ServiceAccount = string(c.ServiceAccount.Key)
	}

	spec.BootstrapTokenID, spec.BootstrapTokenSecret, _ = strings.Cut(c.Token, ".")

	return spec
}

func certAndKey(c *configs.PEMCertificateAndKey) *secrets.CertAndKey {
	if c == nil {
		return nil
	}

	return &secrets.CertAndKey{Crt: c.Crt, Key: c.Key}
}

func certs(cs []configs.PEMCertificate) []secrets.Cert {
	out := make([]secrets.Cert, 0, len(cs))
	for _, c := range cs {
		out = append(out, secrets.Cert{Crt: c.Crt})
	}

	return out
}
