package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

// KubernetesChecks are Kubernetes' checks, as Talos's health runs them
// after the node's own, through the admin kubeconfig a control plane hands
// out.
var KubernetesChecks = []Check{
	{Name: "kubelet to be healthy", Run: KubeletHealthy},
	{Name: "all k8s nodes to report", Run: NodesReport},
	{Name: "all control plane static pods to be running", Run: StaticPods(false)},
	{Name: "all control plane components to be ready", Run: StaticPods(true)},
	{Name: "all k8s nodes to report ready", Run: NodesReady},
	{Name: "kube-proxy to report ready", Run: Workload(true, "kube-proxy")},
	{Name: "coredns to report ready", Run: Workload(false, "coredns")},
	{Name: "all k8s nodes to report schedulable", Run: NodesSchedulable},
}

// KubeletHealthy: every node's kubelet runs and passes its health check.
func KubeletHealthy(ctx context.Context, c *Cluster) error {
	return eachServiceList(ctx, c, c.Nodes, func(l *machine.ServiceList) error {
		return client.ServiceHealthy(l, "kubelet")
	})
}

func kubeNodes(ctx context.Context, c *Cluster) ([]kubernetes.Node, error) {
	k, err := c.Kubernetes(ctx)
	if err != nil {
		return nil, err
	}

	return k.Nodes(ctx)
}

// NodesReport: every node has registered with the API server.
func NodesReport(ctx context.Context, c *Cluster) error {
	ns, err := kubeNodes(ctx, c)
	if err != nil {
		return err
	}

	if len(ns) < len(c.Nodes) {
		names := make([]string, len(ns))
		for i, n := range ns {
			names[i] = n.Name
		}

		return fmt.Errorf("expected %d nodes, %d reported: [%s]", len(c.Nodes), len(ns), strings.Join(names, " "))
	}

	return nil
}

// NodesReady: every registered node is Ready.
func NodesReady(ctx context.Context, c *Cluster) error {
	ns, err := kubeNodes(ctx, c)
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

// NodesSchedulable: no node is cordoned.
func NodesSchedulable(ctx context.Context, c *Cluster) error {
	ns, err := kubeNodes(ctx, c)
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

// StaticPods wants each control-plane component's pod on every
// control-plane node, running (or ready).
func StaticPods(ready bool) func(context.Context, *Cluster) error {
	return func(ctx context.Context, c *Cluster) error {
		k, err := c.Kubernetes(ctx)
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
			ok := p.Phase == "Running"
			if ready {
				ok = p.Ready
			}

			if ok {
				count[p.Labels["k8s-app"]]++
			} else {
				bad = append(bad, fmt.Sprintf("%s (%s)", p.Name, p.Phase))
			}
		}

		for _, app := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			if count[app] < len(c.ControlPlanes) {
				return fmt.Errorf("expected %d %s pods ready, have %d; not ready: [%s]", len(c.ControlPlanes), app, count[app], strings.Join(bad, " "))
			}
		}

		return nil
	}
}

// Workload wants a DaemonSet or Deployment of kube-system fully ready;
// one that is not deployed (disabled in the config) is skipped, and says
// so.
func Workload(daemonSet bool, name string) func(context.Context, *Cluster) error {
	return func(ctx context.Context, c *Cluster) error {
		k, err := c.Kubernetes(ctx)
		if err != nil {
			return err
		}

		read := k.Deployment
		if daemonSet {
			read = k.DaemonSet
		}

		r, err := read(ctx, "kube-system", name)
		if kubernetes.IsNotFound(err) {
			return ErrSkipped
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
