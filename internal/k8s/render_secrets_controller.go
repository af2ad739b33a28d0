package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/k8s/secrets"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// RenderSecretsController issues the control plane's certificates and
// kubeconfigs from the config's CAs and lays them out under SecretsDir
// (Talos's RenderSecretsStaticPodController). SecretStatus static-pods
// carries their version, which the static pods are annotated with. The
// certificates are issued again when an input changes and when half
// their lifetime has passed.
type RenderSecretsController struct {
	// Root is where absolute paths go ("/" on a node).
	Root string
	// Now is the clock (time.Now).
	Now func() time.Time
	// RenewCheck is how often expiry is looked at (an hour).
	RenewCheck time.Duration
}

// Name implements bus.Controller.
func (*RenderSecretsController) Name() string { return "k8s.RenderSecretsStaticPodController" }

// Inputs implements bus.Controller.
func (*RenderSecretsController) Inputs() []bus.Input {
	return []bus.Input{
		machineConfigInput,
		{Namespace: networkres.Namespace, Type: networkres.NodeAddressType, ID: networkres.NodeAddressesCur},
		{Namespace: networkres.Namespace, Type: networkres.HostnameStatusType, ID: networkres.HostnameID},
	}
}

// Outputs implements bus.Controller.
func (*RenderSecretsController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.SecretsStatusType}}
}

// Run implements bus.Controller.
func (c *RenderSecretsController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	now := c.Now
	if now == nil {
		now = time.Now
	}

	every := c.RenewCheck
	if every == 0 {
		every = time.Hour
	}

	tick := time.NewTicker(every)
	defer tick.Stop()

	var (
		lastKey string
		certs   *secrets.StaticPodCerts
	)

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-tick.C:
		}

		cfg, err := activeConfig(ctx, r)
		if err != nil {
			return err
		}

		if cfg == nil || !cfg.IsControlPlane() {
			if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceControlPlane, k8s.SecretsStatusType, map[string]k8s.StatusSpec{}); err != nil {
				return err
			}

			continue
		}

		host, fqdn, addrs, ok, err := nodeIdentity(ctx, r)
		if err != nil {
			return err
		}

		if !ok {
			continue // the network has not named the node yet
		}

		addrs = withoutClusterNetworks(cfg, addrs)

		in, err := secrets.FromConfig(cfg, host, fqdn, addrs)
		if err != nil {
			r.Logger().Error("kubernetes secrets", "error", err)
			continue
		}

		in.Now = now
		in.KubePrismPort = KubePrismPort(cfg)

		// Reissue only when what the certificates say changed, or they age:
		// a reissue changes the secrets version and so restarts every
		// control-plane pod on the node.
		key, err := certsKey(cfg, host, fqdn, addrs, in)
		if err != nil {
			return err
		}

		if certs == nil || key != lastKey || secrets.NeedsRenewal(certs.APIServer.Crt, now()) {
			if certs, err = secrets.IssueStaticPodCerts(in); err != nil {
				r.Logger().Error("kubernetes secrets", "error", err)
				continue
			}

			lastKey = key
		}

		version, err := secrets.WriteStaticPodSecrets(secrets.WriteOptions{Dir: filepath.Join(c.root(), constants.SecretsDir), Chown: true}, in, certs)
		if err != nil {
			r.Logger().Error("write kubernetes secrets", "error", err)
			continue
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceControlPlane, k8s.SecretsStatusType,
			map[string]k8s.StatusSpec{k8s.StaticPodsStatusID: {Ready: true, Version: version}}); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

func (c *RenderSecretsController) root() string {
	if c.Root == "" {
		return "/"
	}

	return c.Root
}

// nodeIdentity is the node's hostname, FQDN and global addresses; ok is
// false until the network has a hostname.
func nodeIdentity(ctx context.Context, r bus.Reader) (host, fqdn string, addrs []netip.Addr, ok bool, err error) {
	hs, err := bus.GetAs[*networkres.HostnameStatus](ctx, r, bus.Pointer{Namespace: networkres.Namespace, Type: networkres.HostnameStatusType, ID: networkres.HostnameID})
	if bus.IsNotFound(err) {
		return "", "", nil, false, nil
	}

	if err != nil {
		return "", "", nil, false, err
	}

	na, err := bus.GetAs[*networkres.NodeAddress](ctx, r, bus.Pointer{Namespace: networkres.Namespace, Type: networkres.NodeAddressType, ID: networkres.NodeAddressesCur})
	if err != nil && !bus.IsNotFound(err) {
		return "", "", nil, false, err
	}

	if err == nil {
		for _, p := range na.TypedSpec().Addresses {
			if a := p.Addr(); a.IsGlobalUnicast() {
				addrs = append(addrs, a)
			}
		}
	}

	spec := hs.TypedSpec()

	return spec.Hostname, spec.FQDN(), addrs, spec.Hostname != "", nil
}

// withoutClusterNetworks drops the addresses in the pod and service
// networks (Talos's "no-k8s" node address filter): the CNI's own addresses
// (flannel.1, cni0) appear once pods run, and must not reissue the
// apiserver's certificate, which restarts it, under a cluster in use.
// The config's shared IPs are always there, whether held or not.
func withoutClusterNetworks(cfg *configs.Config, addrs []netip.Addr) []netip.Addr {
	cl, err := render.ClusterFrom(cfg)
	if err != nil {
		return addrs
	}

	var nets []netip.Prefix

	for _, s := range slices.Concat(cl.PodSubnets, cl.ServiceSubnets) {
		if p, err := netip.ParsePrefix(s); err == nil {
			nets = append(nets, p)
		}
	}

	// The shared IPs come from the config, always and last: the node
	// holds one only while it wins its election, and the certificate
	// must not be reissued (restarting the API server, just as the node
	// takes over the cluster's endpoint) each time it moves.
	shared := cfg.SharedIPs()

	out := slices.DeleteFunc(slices.Clone(addrs), func(a netip.Addr) bool {
		return slices.Contains(shared, a) || slices.ContainsFunc(nets, func(p netip.Prefix) bool { return p.Contains(a) })
	})

	return append(out, shared...)
}

// certsKey is what the certificates are made from, by value. (It was once
// fmt.Sprint of the config's pointers, whose nested pointers print as
// addresses: every applied config looked new, and every config change,
// even a scheduler image, reissued the certificates and restarted the
// API server.)
func certsKey(cfg *configs.Config, host, fqdn string, addrs []netip.Addr, in secrets.Inputs) (string, error) {
	var etcdCA *configs.PEMCertificateAndKey
	if cfg.Cluster.Etcd != nil {
		etcdCA = cfg.Cluster.Etcd.CA
	}

	b, err := json.Marshal([]any{cfg.Cluster.CA, cfg.Cluster.AggregatorCA, cfg.Cluster.ServiceAccount, etcdCA, host, fqdn, addrs,
		in.Endpoint, in.CertSANs, in.ServiceSubnets, in.DNSDomain, in.LocalAPIServerPort, KubePrismPort(cfg), in.ClusterName,
		in.SecretboxEncryptionSecret, in.AESCBCEncryptionSecret})
	if err != nil {
		return "", fmt.Errorf("kubernetes secrets: %w", err)
	}

	return string(b), nil
}
