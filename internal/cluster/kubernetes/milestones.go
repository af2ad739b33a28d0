package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Milestone is a moment the API server recorded: when a node registered
// or turned Ready, when a pod's containers started or it turned Ready,
// when a workload was created. cluster create's timeline is made of them
// and of the nodes' own.
type Milestone struct {
	At time.Time
	// Node is the node it happened on ("" for the cluster as a whole).
	Node string
	What string
}

// The wire types of the timestamps read; the converter parses RFC 3339.
type (
	stampedMeta struct {
		Name              string            `json:"name"`
		CreationTimestamp metav1.Time       `json:"creationTimestamp"`
		Annotations       map[string]string `json:"annotations"`
		OwnerReferences   []struct {
			Kind string `json:"kind"`
		} `json:"ownerReferences"`
	}

	stampedCondition struct {
		Type               string      `json:"type"`
		Status             string      `json:"status"`
		LastTransitionTime metav1.Time `json:"lastTransitionTime"`
	}

	stampedNode struct {
		Metadata stampedMeta `json:"metadata"`
		Status   struct {
			Conditions []stampedCondition `json:"conditions"`
		} `json:"status"`
	}

	stampedPod struct {
		Metadata stampedMeta `json:"metadata"`
		Spec     struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
		Status struct {
			Conditions        []stampedCondition `json:"conditions"`
			ContainerStatuses []struct {
				State struct {
					Running struct {
						StartedAt metav1.Time `json:"startedAt"`
					} `json:"running"`
				} `json:"state"`
			} `json:"containerStatuses"`
		} `json:"status"`
	}
)

// Milestones reads the moments the cluster's bring-up left in the API:
// every node's registration and Ready, and for kube-system's pods (the
// control plane's static pods, kube-proxy, flannel, CoreDNS) when their
// containers started and when they turned Ready, and when the bootstrap
// manifests created their workloads. Pods are named by their workload
// (kube-proxy, not kube-proxy-x7k2p) and static pods by their component.
func (c *Client) Milestones(ctx context.Context) ([]Milestone, error) {
	var out []Milestone

	nodes, err := c.dyn.Resource(nodesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}

	wn, err := decodeItems[stampedNode](nodes)
	if err != nil {
		return nil, err
	}

	for _, n := range wn {
		out = append(out, Milestone{At: n.Metadata.CreationTimestamp.Time, Node: n.Metadata.Name, What: "node registered"})
		if t, ok := conditionTrue(n.Status.Conditions, "Ready"); ok {
			out = append(out, Milestone{At: t, Node: n.Metadata.Name, What: "node Ready"})
		}
	}

	pods, err := c.dyn.Resource(podsResource).Namespace("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}

	wp, err := decodeItems[stampedPod](pods)
	if err != nil {
		return nil, err
	}

	for _, p := range wp {
		name := podWorkload(p)

		var started time.Time
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Running.StartedAt.Time; !t.IsZero() && (started.IsZero() || t.Before(started)) {
				started = t
			}
		}

		if !started.IsZero() {
			out = append(out, Milestone{At: started, Node: p.Spec.NodeName, What: name + " started"})
		}

		if t, ok := conditionTrue(p.Status.Conditions, "Ready"); ok {
			out = append(out, Milestone{At: t, Node: p.Spec.NodeName, What: name + " Ready"})
		}
	}

	// The bootstrap manifests' apply shows as their workloads' creation.
	for _, gvr := range []schema.GroupVersionResource{daemonSetsResource, deploymentResource} {
		list, err := c.dyn.Resource(gvr).Namespace("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
		}

		kind := strings.TrimSuffix(gvr.Resource, "s")
		for _, item := range list.Items {
			out = append(out, Milestone{At: item.GetCreationTimestamp().Time, What: kind + "/" + item.GetName() + " created"})
		}
	}

	slices.SortStableFunc(out, func(a, b Milestone) int { return a.At.Compare(b.At) })

	return out, nil
}

func conditionTrue(conds []stampedCondition, typ string) (time.Time, bool) {
	for _, c := range conds {
		if c.Type == typ && c.Status == "True" {
			return c.LastTransitionTime.Time, true
		}
	}

	return time.Time{}, false
}

// podWorkload names a pod by what made it: a static pod by its component
// (kube-apiserver-node1 is kube-apiserver), a workload's pod by its
// DaemonSet or Deployment (the name up to its generated suffixes).
func podWorkload(p stampedPod) string {
	name := p.Metadata.Name
	if _, mirror := p.Metadata.Annotations["kubernetes.io/config.mirror"]; mirror {
		if p.Spec.NodeName != "" {
			return strings.TrimSuffix(name, "-"+p.Spec.NodeName)
		}

		return name
	}

	if len(p.Metadata.OwnerReferences) == 0 {
		return name
	}

	// A DaemonSet's pod is <ds>-<5>; a Deployment's <deploy>-<rs hash>-<5>.
	parts := strings.Split(name, "-")
	drop := 1
	if p.Metadata.OwnerReferences[0].Kind == "ReplicaSet" {
		drop = 2
	}

	if len(parts) > drop {
		parts = parts[:len(parts)-drop]
	}

	return strings.Join(parts, "-")
}
