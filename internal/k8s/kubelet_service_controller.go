package k8s

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/hostdns"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// KubeletServiceController writes the kubelet's files whenever its spec
// or the cluster's secrets change, and restarts a kubelet that runs with
// an older spec (Talos's KubeletServiceController).
type KubeletServiceController struct {
	kubelet *kubelet
}

// Name implements bus.Controller.
func (*KubeletServiceController) Name() string { return "k8s.KubeletServiceController" }

// Inputs implements bus.Controller.
func (*KubeletServiceController) Inputs() []bus.Input {
	return []bus.Input{machineConfigInput, {Namespace: k8s.NamespaceK8s, Type: k8s.KubeletSpecType, ID: k8s.KubeletID}}
}

// Outputs implements bus.Controller: the kubelet's files and service.
func (*KubeletServiceController) Outputs() []bus.Output { return nil }

// Run implements bus.Controller.
func (c *KubeletServiceController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	kl := c.kubelet
	root := kl.k.root()

	// trusted is the CAs the kubelet's credentials were last checked
	// against: when cluster.ca or cluster.acceptedCAs change (rotate-ca),
	// they are checked again and the kubelet restarted.
	trusted := ""

	for {
		cfg, done, err := nextConfig(ctx, r)
		if done || err != nil {
			return err
		}

		res, err := bus.GetAs[*k8s.KubeletSpec](ctx, r, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.KubeletSpecType, ID: k8s.KubeletID})
		if bus.IsNotFound(err) || cfg == nil {
			continue
		}

		if err != nil {
			return err
		}

		spec := *res.TypedSpec()

		files, err := kubeletFiles(cfg, spec)
		if err == nil {
			err = WriteFiles(root, files, false)
		}

		if err == nil {
			_, forward := configs.HostDNSEnabled(cfg)
			err = writeResolvConf(root, forward)
		}

		if err != nil {
			r.Logger().Error("kubelet files", "error", err)
			continue
		}

		for _, d := range []string{constants.ManifestsDir, "/var/lib/kubelet", "/var/log/pods", "/var/log/containers", "/etc/cni/net.d"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				r.Logger().Error("kubelet directories", "error", err)
			}
		}

		cas := render.KubeletCAs(cfg)
		caChanged := trusted != "" && trustKey(cas) != trusted

		if trusted == "" || caChanged {
			removed, err := refreshKubeletCredentials(root, cas)
			if err != nil {
				r.Logger().Error("kubelet credentials", "error", err)
				continue
			}

			if removed {
				r.Logger().Info("kubelet client certificate is not from an accepted CA: removed, the kubelet bootstraps again")
			}

			trusted = trustKey(cas)
		}

		switch running := kl.node.ServiceRunning(KubeletServiceID); {
		case running && caChanged:
			r.Logger().Info("restarting kubelet: the cluster's CAs changed")
		case running && kl.changed(spec):
			r.Logger().Info("restarting kubelet: its spec changed")
		default:
			r.ResetRestartBackoff()

			continue
		}

		if err := kl.node.RestartService(ctx, KubeletServiceID); err != nil {
			r.Logger().Error("restart kubelet", "error", err)
		}

		r.ResetRestartBackoff()
	}
}

// writeResolvConf gives the kubelet the node's resolvers at Talos's path
// (pods with dnsPolicy Default and CoreDNS read it). With host DNS
// forwarding, the one nameserver is the node's forwarder, as on Talos: a
// loopback resolver (Docker's 127.0.0.11) is out of a pod's reach.
func writeResolvConf(root string, forwardToHost bool) error {
	data, err := os.ReadFile(filepath.Join(root, "/etc/resolv.conf"))
	if err != nil {
		data = []byte("nameserver 127.0.0.1\n")
	}

	if forwardToHost {
		data = hostResolvConf(data)
	}

	return WriteFiles(root, []render.File{{Path: constants.ResolvConfPath, Mode: 0o644, Data: data}}, false)
}

// hostResolvConf keeps a resolv.conf's search and options lines and
// replaces its nameservers with the host DNS forwarder.
func hostResolvConf(orig []byte) []byte {
	out := []string{"nameserver " + hostdns.Address.String()}

	for _, line := range strings.Split(string(orig), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "search" || f[0] == "options") {
			out = append(out, line)
		}
	}

	return []byte(strings.Join(out, "\n") + "\n")
}
