package talosctl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// del deletes the object at path; a missing one is errNotFound.
func (k *kubeAPI) del(ctx context.Context, path string) error {
	return k.do(ctx, http.MethodDelete, path, strings.NewReader(`{"propagationPolicy":"Background"}`), nil)
}

// kubePod is the part of a pod upgrade-k8s and convert-k8s read.
type kubePod struct {
	Metadata struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		HostIP     string          `json:"hostIP"`
		Phase      string          `json:"phase"`
		Conditions []kubeCondition `json:"conditions"`
	} `json:"status"`
}

type kubeCondition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

func (p kubePod) ready() bool {
	return slices.Contains(p.Status.Conditions, kubeCondition{Type: "Ready", Status: "True"})
}

// mirror: the kubelet's copy of a static pod, not a pod of a workload
// that happens to carry the same labels (a self-hosted DaemonSet's).
func (p kubePod) mirror() bool {
	_, ok := p.Metadata.Annotations["kubernetes.io/config.mirror"]
	return ok
}

// componentPods lists kube-system's pods of one control-plane component.
func (k *kubeAPI) componentPods(ctx context.Context, component string) ([]kubePod, error) {
	var list struct {
		Items []kubePod `json:"items"`
	}

	err := k.get(ctx, "api/v1/namespaces/kube-system/pods?labelSelector="+url.QueryEscape("k8s-app="+component), &list)

	return list.Items, err
}

// kubeNodeInfo is a node as upgrade-k8s sees it.
type kubeNodeInfo struct {
	Name           string
	IP             string
	ControlPlane   bool
	Ready          bool
	KubeletVersion string
}

func (k *kubeAPI) nodeInfos(ctx context.Context) ([]kubeNodeInfo, error) {
	var list struct {
		Items []struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Status struct {
				Addresses []struct {
					Type    string `json:"type"`
					Address string `json:"address"`
				} `json:"addresses"`
				Conditions []kubeCondition `json:"conditions"`
				NodeInfo   struct {
					KubeletVersion string `json:"kubeletVersion"`
				} `json:"nodeInfo"`
			} `json:"status"`
		} `json:"items"`
	}

	if err := k.get(ctx, "api/v1/nodes", &list); err != nil {
		return nil, err
	}

	out := make([]kubeNodeInfo, 0, len(list.Items))

	for _, n := range list.Items {
		info := kubeNodeInfo{Name: n.Metadata.Name, KubeletVersion: n.Status.NodeInfo.KubeletVersion,
			Ready: slices.Contains(n.Status.Conditions, kubeCondition{Type: "Ready", Status: "True"})}

		_, info.ControlPlane = n.Metadata.Labels["node-role.kubernetes.io/control-plane"]

		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" && info.IP == "" {
				info.IP = a.Address
			}
		}

		out = append(out, info)
	}

	return out, nil
}

// rollout is a DaemonSet's or a Deployment's progress: done when every
// replica runs the current template and is available.
type rollout struct {
	Metadata struct {
		Generation int64 `json:"generation"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Image string `json:"image"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64 `json:"observedGeneration"`
		// DaemonSet
		Desired   int `json:"desiredNumberScheduled"`
		Updated   int `json:"updatedNumberScheduled"`
		Available int `json:"numberAvailable"`
		// Deployment
		Replicas          int `json:"replicas"`
		UpdatedReplicas   int `json:"updatedReplicas"`
		AvailableReplicas int `json:"availableReplicas"`
	} `json:"status"`
}

func (r rollout) done(daemonSet bool) error {
	if r.Status.ObservedGeneration < r.Metadata.Generation {
		return errors.New("the controller has not seen the new spec yet")
	}

	want, updated, available := r.Status.Replicas, r.Status.UpdatedReplicas, r.Status.AvailableReplicas
	if daemonSet {
		want, updated, available = r.Status.Desired, r.Status.Updated, r.Status.Available
	}

	if updated < want || available < want {
		return fmt.Errorf("%d of %d updated, %d available", updated, want, available)
	}

	return nil
}
