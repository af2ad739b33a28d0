package talosctl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

// Kubernetes' checks, as Talos's health runs them after the node's own.
// They talk to the API server with the admin kubeconfig a control plane
// hands out.
var kubernetesChecks = []healthCheck{
	{name: "kubelet to be healthy", check: checkKubelet},
	{name: "all k8s nodes to report", check: checkNodesReport},
	{name: "all control plane static pods to be running", check: checkStaticPods(false)},
	{name: "all control plane components to be ready", check: checkStaticPods(true)},
	{name: "all k8s nodes to report ready", check: checkNodesReady},
	{name: "kube-proxy to report ready", check: checkWorkload(true, "kube-proxy")},
	{name: "coredns to report ready", check: checkWorkload(false, "coredns")},
	{name: "all k8s nodes to report schedulable", check: checkSchedulable},
}

// kube fetches the admin kubeconfig from the first control plane once.
func (s *session) kube(ctx context.Context) (*kubernetes.Client, error) {
	if s.kubeClient != nil {
		return s.kubeClient, nil
	}

	results := fanOut(ctx, s.on(s.controlPlanes[:1]), func(ctx context.Context, c *client.Client) ([]byte, error) {
		return fetchKubeconfig(ctx, c)
	})

	if err := results[0].Err; err != nil {
		if status.Code(err) == codes.PermissionDenied {
			return nil, errNoAdmin
		}

		return nil, fmt.Errorf("kubeconfig: %s", client.Message(err))
	}

	k, err := kubernetes.FromKubeconfig(results[0].Value, s.kubeServer)
	if err != nil {
		return nil, err
	}

	s.kubeClient = k

	return k, nil
}

func nodes(ctx context.Context, s *session) ([]kubernetes.Node, error) {
	k, err := s.kube(ctx)
	if err != nil {
		return nil, err
	}

	return k.Nodes(ctx)
}

func checkKubelet(ctx context.Context, s *session) error {
	return eachServiceList(ctx, s, func(l *machine.ServiceList) error {
		for _, svc := range l.GetServices() {
			if svc.GetId() == "kubelet" {
				if svc.GetState() == "Running" && svc.GetHealth().GetHealthy() {
					return nil
				}

				return fmt.Errorf("kubelet is %s: %s", svc.GetState(), svc.GetHealth().GetLastMessage())
			}
		}

		return errors.New("no kubelet service")
	})
}

func checkNodesReport(ctx context.Context, s *session) error {
	ns, err := nodes(ctx, s)
	if err != nil {
		return err
	}

	if len(ns) < len(s.nodes) {
		names := make([]string, len(ns))
		for i, n := range ns {
			names[i] = n.Name
		}

		return fmt.Errorf("expected %d nodes, %d reported: [%s]", len(s.nodes), len(ns), strings.Join(names, " "))
	}

	return nil
}

func checkNodesReady(ctx context.Context, s *session) error {
	ns, err := nodes(ctx, s)
	if err != nil {
		return err
	}

	var notReady []string

	for _, n := range ns {
		if !n.Ready {
			notReady = append(notReady, n.Name)
		}
	}

	if len(notReady) > 0 {
		return fmt.Errorf("some nodes are not ready: [%s]", strings.Join(notReady, " "))
	}

	return nil
}

func checkSchedulable(ctx context.Context, s *session) error {
	ns, err := nodes(ctx, s)
	if err != nil {
		return err
	}

	for _, n := range ns {
		if n.Unschedulable {
			return fmt.Errorf("node %s is not schedulable", n.Name)
		}
	}

	return nil
}

// checkStaticPods wants each control-plane component's pod on every
// control-plane node, running (or ready).
func checkStaticPods(ready bool) func(context.Context, *session) error {
	return func(ctx context.Context, s *session) error {
		k, err := s.kube(ctx)
		if err != nil {
			return err
		}

		pods, err := k.Pods(ctx, "kube-system", "tier=control-plane")
		if err != nil {
			return err
		}

		count := map[string]int{}

		var bad []string

		for _, p := range pods {
			app := p.Labels["k8s-app"]
			ok := p.Phase == "Running"

			if ready {
				ok = p.Ready
			}

			if ok {
				count[app]++
			} else {
				bad = append(bad, fmt.Sprintf("%s (%s)", p.Name, p.Phase))
			}
		}

		for _, app := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			if count[app] < len(s.controlPlanes) {
				return fmt.Errorf("expected %d %s pods ready, have %d; not ready: [%s]", len(s.controlPlanes), app, count[app], strings.Join(bad, " "))
			}
		}

		return nil
	}
}

// checkWorkload wants a DaemonSet or Deployment of kube-system fully
// ready; one that is not deployed (disabled in the config) is skipped, and
// says so.
func checkWorkload(daemonSet bool, name string) func(context.Context, *session) error {
	return func(ctx context.Context, s *session) error {
		k, err := s.kube(ctx)
		if err != nil {
			return err
		}

		read := k.Deployment
		if daemonSet {
			read = k.DaemonSet
		}

		r, err := read(ctx, "kube-system", name)
		if kubernetes.IsNotFound(err) {
			return errSkipped
		}

		if err != nil {
			return err
		}

		if r.Desired == 0 || r.Ready < r.Desired {
			return fmt.Errorf("expected %d ready, have %d", r.Desired, r.Ready)
		}

		return nil
	}
}

// errNoAdmin: only admins get a kubeconfig.
var errNoAdmin = errors.New("getting a kubeconfig needs the os:admin role")

// errSkipped marks a check that does not apply; waitCheck says so.
var errSkipped = errors.New("not deployed")

// skip is a check that does not apply, and why: waitCheck prints
// "skipped (why)".
type skip string

func (s skip) Error() string        { return string(s) }
func (s skip) Is(target error) bool { return target == errSkipped }
