package talos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
	"github.com/talosbox/talosbox/internal/pki"
)

// rotateKubernetes rotates the Kubernetes API CA (cluster.ca) through the
// Talos API client api, in Talos's three steps, checking between them that
// every Kubernetes node is Ready through a kubeconfig of the current PKI.
// Each node's kubelet follows the CAs itself (restart, and a new client
// certificate once its old CA is dropped); the control plane's
// certificates are reissued by the control-plane nodes.
func (r *rotator) rotateKubernetes(ctx context.Context, api *client.Client) error {
	sec := caSection{name: "Kubernetes", path: "/cluster", get: func(cfg *configs.Config) (*configs.PEMCertificateAndKey, []configs.PEMCertificate) {
		return cfg.Cluster.CA, cfg.Cluster.AcceptedCAs
	}}

	current, err := api.MachineConfig(client.WithNode(ctx, r.controlPlanes[0]))
	if err != nil {
		return fmt.Errorf("machine config of %s: %w", r.controlPlanes[0], err)
	}

	cfg, err := configs.Decode(current)
	if err != nil {
		return err
	}

	if cfg.Cluster == nil || cfg.Cluster.CA == nil || len(cfg.Cluster.CA.Crt) == 0 {
		return fmt.Errorf("%s has no cluster.ca", r.controlPlanes[0])
	}

	sec.current = cfg.Cluster.CA.Crt

	if sec.next, err = pki.NewCA(pki.CAOptions{Organization: "kubernetes", KeyType: pki.ECDSAP256}); err != nil {
		return err
	}

	r.printf("> Starting Kubernetes API PKI rotation, dry-run mode %v...\n", r.flags.dryRun)
	r.printTopology()
	r.printf("> Current Kubernetes CA:\n%s", indent(sec.current))
	r.printf("> New Kubernetes CA:\n%s", indent(sec.next.Crt))

	steps := []func(ctx context.Context) error{
		r.verifyKubernetes(api, "existing PKI"),
		r.step(api, &sec, "> Adding new Kubernetes CA as accepted...", addNewAccepted),
		r.step(api, &sec, "> Making new Kubernetes CA the issuing CA, old Kubernetes CA the accepted CA...", swapCAs),
		r.verifyKubernetes(api, "new PKI"),
		r.step(api, &sec, "> Removing old Kubernetes CA from the accepted CAs...", dropOld),
		r.verifyKubernetes(api, "new PKI"),
	}

	for _, st := range steps {
		if err := st(ctx); err != nil {
			return err
		}
	}

	if !r.flags.dryRun {
		r.printf("> Kubernetes clients need a kubeconfig of the new CA: talosctl kubeconfig\n")
	}

	return nil
}

// verifyKubernetes waits until the Kubernetes API answers through the
// first control plane's admin kubeconfig (of the CA it issues with now)
// and every node is Ready.
func (r *rotator) verifyKubernetes(api *client.Client, label string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		r.printf("> Verifying connectivity with %s...\n", label)

		if r.flags.dryRun {
			r.printf(" - OK (dry-run mode)\n")

			return nil
		}

		var ready int

		err := retryFor(ctx, 3*time.Minute, func() error {
			kube, err := kubernetes.FromNode(client.WithNode(ctx, r.controlPlanes[0]), api, "")
			if err != nil {
				return err
			}

			callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()

			nodes, err := kube.Nodes(callCtx)
			if err != nil {
				return err
			}

			var notReady []string

			for _, n := range nodes {
				if !n.Ready {
					notReady = append(notReady, n.Name)
				}
			}

			if len(notReady) > 0 {
				return fmt.Errorf("nodes not ready: %q", notReady)
			}

			if len(nodes) == 0 {
				return errors.New("no nodes")
			}

			ready = len(nodes)

			return nil
		})
		if err != nil {
			return fmt.Errorf("kubernetes: %w", err)
		}

		r.printf(" - OK (%d nodes ready)\n", ready)

		return nil
	}
}
