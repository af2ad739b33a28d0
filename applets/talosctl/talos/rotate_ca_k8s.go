package talos

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
	"github.com/talosbox/talosbox/internal/pki"
	k8sres "github.com/talosbox/talosbox/internal/resources/k8s"
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

	// Each control plane's API server restarts with every step: the next
	// node is patched once it serves again, so one API server at a time is
	// down, as in a rolling upgrade.
	r.afterPatch = func(ctx context.Context, c *client.Client, node string, controlPlane bool, before string) error {
		if !controlPlane {
			return nil
		}

		return r.waitAPIServer(ctx, c, node, before, &sec)
	}
	defer func() { r.afterPatch = nil }()

	steps := []func(ctx context.Context) error{
		r.verifyKubernetes(api, &sec, "existing PKI"),
		r.step(api, &sec, "> Adding new Kubernetes CA as accepted...", addNewAccepted),
		r.restartKubeSystem(api, &sec),
		r.step(api, &sec, "> Making new Kubernetes CA the issuing CA, old Kubernetes CA the accepted CA...", swapCAs),
		r.verifyKubernetes(api, &sec, "new PKI"),
		r.step(api, &sec, "> Removing old Kubernetes CA from the accepted CAs...", dropOld),
		r.verifyKubernetes(api, &sec, "new PKI"),
	}

	for _, st := range steps {
		if err := st(ctx); err != nil {
			return err
		}
	}

	if !r.flags.dryRun {
		r.printf("> Kubernetes clients need a kubeconfig of the new CA: talosctl kubeconfig\n")
		r.printf("> Pods outside kube-system that talk to the API server read its CA when they start: restart them (kubectl rollout restart)\n")
	}

	return nil
}

// verifyKubernetes waits until the Kubernetes API answers through the
// first control plane's admin kubeconfig (of the CA it issues with now)
// and every node is Ready.
func (r *rotator) verifyKubernetes(api *client.Client, sec *caSection, label string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		r.printf("> Verifying connectivity with %s...\n", label)

		if r.flags.dryRun {
			r.printf(" - OK (dry-run mode)\n")

			return nil
		}

		var ready int

		err := retryFor(ctx, 3*time.Minute, func() error {
			kube, err := r.kubeClient(ctx, api, r.controlPlanes[0], sec, "")
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

// kubeClient is a Kubernetes client of node's admin kubeconfig that
// trusts both the old and the new CA: while the control planes are
// patched one by one, the endpoint may be served by an API server of
// either. server overrides the kubeconfig's when set.
func (r *rotator) kubeClient(ctx context.Context, api *client.Client, node string, sec *caSection, server string) (*kubernetes.Client, error) {
	data, err := api.Kubeconfig(client.WithNode(ctx, node))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of %s: %w", node, err)
	}

	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of %s: %w", node, err)
	}

	for _, c := range cfg.Clusters {
		c.CertificateAuthorityData = append(append(bytes.Clone(sec.current), '\n'), sec.next.Crt...)
	}

	if data, err = clientcmd.Write(*cfg); err != nil {
		return nil, err
	}

	return kubernetes.FromKubeconfig(data, server)
}

// secretsVersion is the version of the control-plane secrets a node
// wrote last ("" before any).
func secretsVersion(ctx context.Context, c *client.Client, node string) string {
	resp, err := c.Resource.Get(client.WithNode(ctx, node), &resource.GetRequest{Type: k8sres.SecretsStatusType, Id: k8sres.StaticPodsStatusID})
	if err != nil {
		return ""
	}

	var st k8sres.StatusSpec
	if err := yaml.Unmarshal(resp.GetResource().GetSpecYaml(), &st); err != nil {
		return ""
	}

	return st.Version
}

// waitAPIServer waits until a control plane wrote secrets of a version
// other than before and its API server's mirror pod runs them, Ready.
func (r *rotator) waitAPIServer(ctx context.Context, c *client.Client, node, before string, sec *caSection) error {
	var now string

	err := retryFor(ctx, time.Minute, func() error {
		if now = secretsVersion(ctx, c, node); now == before || now == "" {
			return fmt.Errorf("%s has not written new secrets", node)
		}

		return nil
	})
	if err != nil {
		return err
	}

	return retryFor(ctx, 3*time.Minute, func() error {
		kube, err := r.kubeClient(ctx, c, node, sec, "")
		if err != nil {
			return err
		}

		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()

		pods, err := kube.Pods(callCtx, "kube-system", "k8s-app=kube-apiserver")
		if err != nil {
			return err
		}

		for _, p := range pods {
			if p.Mirror() && p.HostIP == hostOf(node) && p.Annotations["talos.dev/secrets-version"] == now && p.Ready {
				return nil
			}
		}

		return fmt.Errorf("the API server of %s does not run secrets %.12s yet", node, now)
	})
}

func hostOf(node string) string {
	if h, _, err := net.SplitHostPort(node); err == nil {
		return h
	}

	return node
}

// restartKubeSystem replaces kube-system's pods once the new CA is
// accepted: pods read the API server's CA (kube-root-ca.crt, which the
// controller-manager publishes from every accepted CA) when they start,
// so kube-proxy, flannel and CoreDNS started now trust the API server
// both before and after the swap. Without it they lose the API at the
// swap until something restarts them (Talos leaves that to the user).
func (r *rotator) restartKubeSystem(api *client.Client, sec *caSection) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		r.printf("> Restarting kube-system's workloads so that they trust the new CA...\n")

		if r.flags.dryRun {
			r.printf(" - skipped (dry-run)\n")

			return nil
		}

		kube, err := r.kubeClient(ctx, api, r.controlPlanes[0], sec, "")
		if err != nil {
			return err
		}

		next := string(bytes.TrimSpace(sec.next.Crt))

		err = retryFor(ctx, 3*time.Minute, func() error {
			callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()

			root, err := kube.ConfigMapData(callCtx, "kube-system", "kube-root-ca.crt", "ca.crt")
			if err != nil {
				return err
			}

			if !strings.Contains(root, next) {
				return errors.New("kube-system/kube-root-ca.crt does not hold the new CA yet")
			}

			return nil
		})
		if err != nil {
			return fmt.Errorf("kubernetes: %w", err)
		}

		workloads, err := kube.Workloads(ctx, "kube-system")
		if err != nil {
			return fmt.Errorf("kubernetes: %w", err)
		}

		// One at a time: kube-proxy and flannel keep the node's rules while
		// they restart, and CoreDNS keeps a replica serving.
		for _, w := range workloads {
			if err := kube.RolloutRestart(ctx, w, time.Now()); err != nil {
				return fmt.Errorf("kubernetes: %w", err)
			}

			err := retryFor(ctx, 5*time.Minute, func() error {
				callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()

				ro, err := kube.Rollout(callCtx, w)
				if err != nil {
					return err
				}

				return ro.Done()
			})
			if err != nil {
				return fmt.Errorf("kubernetes: %s: %w", w, err)
			}

			r.printf("  - %s: OK\n", w)
		}

		return nil
	}
}

// caOps is the JSON patch that gives a node's config the CA section
// (ca, the new issuing CA or nil when it stays oldCA; accepted, the
// accepted CAs): in the v1alpha1 document (sec.path /ca and
// /acceptedCAs, base64), or, for the Kubernetes CA of a config that holds
// it in a KubeAPIServerCAConfig (Talos 1.14), in that document as Talos's
// rotation patches it (PEM): a control plane's issuingCA and
// acceptedCAs, a worker's acceptedCAs with the CA it trusts first.
func caOps(cfg *configs.Config, sec *caSection, oldCA, ca *configs.PEMCertificateAndKey, accepted []configs.PEMCertificate, controlPlane bool) []map[string]any {
	if sec.path == "/cluster" && configs.DocumentOf[*configs.KubeAPIServerCAConfig](cfg) != nil {
		const doc = "/KubeAPIServerCAConfig"

		if !controlPlane {
			first := oldCA
			if ca != nil {
				first = ca
			}

			trusted := append([]configs.PEMCertificate{{Crt: first.Crt}}, without(accepted, first.Crt)...)

			return []map[string]any{{"op": "add", "path": doc + "/acceptedCAs", "value": pemTexts(trusted)}}
		}

		ops := []map[string]any{{"op": "add", "path": doc + "/acceptedCAs", "value": pemTexts(accepted)}}
		if ca != nil {
			ops = append(ops, map[string]any{"op": "add", "path": doc + "/issuingCA", "value": map[string]string{"cert": string(ca.Crt), "key": string(ca.Key)}})
		}

		return ops
	}

	ops := []map[string]any{{"op": "add", "path": sec.path + "/acceptedCAs", "value": pemList(accepted)}}
	if ca != nil {
		value := map[string]string{"crt": base64.StdEncoding.EncodeToString(ca.Crt)}
		if len(ca.Key) > 0 {
			value["key"] = base64.StdEncoding.EncodeToString(ca.Key)
		}

		ops = append(ops, map[string]any{"op": "add", "path": sec.path + "/ca", "value": value})
	}

	return ops
}

// pemTexts are certificates as a document lists them: PEM text.
func pemTexts(certs []configs.PEMCertificate) []string {
	out := make([]string, 0, len(certs))
	for _, c := range certs {
		out = append(out, string(c.Crt))
	}

	return out
}
