package kubernetes

import (
	"errors"
	"fmt"
	"slices"
)

// Node is a node as the checks and upgrades see it.
type Node struct {
	Name   string
	Labels map[string]string
	// IP is the first InternalIP the kubelet reports.
	IP             string
	Ready          bool
	Unschedulable  bool
	KubeletVersion string
}

// ControlPlane: the node carries the control-plane role label.
func (n Node) ControlPlane() bool {
	_, ok := n.Labels["node-role.kubernetes.io/control-plane"]
	return ok
}

// Pod is the part of a pod the checks and upgrades read.
type Pod struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Images      []string
	HostIP      string
	Phase       string
	Ready       bool
}

// Mirror: the kubelet's copy of a static pod, not a pod of a workload
// that happens to carry the same labels (a self-hosted DaemonSet's).
func (p Pod) Mirror() bool {
	_, ok := p.Annotations["kubernetes.io/config.mirror"]
	return ok
}

// Rollout is a DaemonSet's or a Deployment's progress, in the same terms
// for both.
type Rollout struct {
	DaemonSet          bool
	Generation         int64
	ObservedGeneration int64
	Images             []string
	// Desired is a DaemonSet's desiredNumberScheduled, a Deployment's
	// replicas; Updated, Available and Ready likewise.
	Desired, Updated, Available, Ready int64
}

// The wire types mirror the JSON fields read; the unstructured converter
// fills them by their json tags.
type (
	objectMeta struct {
		Name        string            `json:"name"`
		Generation  int64             `json:"generation"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}

	condition struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}

	container struct {
		Image string `json:"image"`
	}

	podSpec struct {
		Containers []container `json:"containers"`
	}

	wireNode struct {
		Metadata objectMeta `json:"metadata"`
		Spec     struct {
			Unschedulable bool `json:"unschedulable"`
		} `json:"spec"`
		Status struct {
			Addresses []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
			Conditions []condition `json:"conditions"`
			NodeInfo   struct {
				KubeletVersion string `json:"kubeletVersion"`
			} `json:"nodeInfo"`
		} `json:"status"`
	}

	wirePod struct {
		Metadata objectMeta `json:"metadata"`
		Spec     podSpec    `json:"spec"`
		Status   struct {
			HostIP     string      `json:"hostIP"`
			Phase      string      `json:"phase"`
			Conditions []condition `json:"conditions"`
		} `json:"status"`
	}

	wireRollout struct {
		Metadata objectMeta `json:"metadata"`
		Spec     struct {
			Template struct {
				Spec podSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
		Status struct {
			ObservedGeneration int64 `json:"observedGeneration"`
			// DaemonSet
			DesiredNumberScheduled int64 `json:"desiredNumberScheduled"`
			UpdatedNumberScheduled int64 `json:"updatedNumberScheduled"`
			NumberAvailable        int64 `json:"numberAvailable"`
			NumberReady            int64 `json:"numberReady"`
			// Deployment
			Replicas          int64 `json:"replicas"`
			UpdatedReplicas   int64 `json:"updatedReplicas"`
			AvailableReplicas int64 `json:"availableReplicas"`
			ReadyReplicas     int64 `json:"readyReplicas"`
		} `json:"status"`
	}
)

var ready = condition{Type: "Ready", Status: "True"}

func containerImages(s podSpec) []string {
	out := make([]string, len(s.Containers))
	for i, c := range s.Containers {
		out[i] = c.Image
	}

	return out
}

func (w wireNode) plain() Node {
	n := Node{
		Name: w.Metadata.Name, Labels: w.Metadata.Labels,
		Ready:          slices.Contains(w.Status.Conditions, ready),
		Unschedulable:  w.Spec.Unschedulable,
		KubeletVersion: w.Status.NodeInfo.KubeletVersion,
	}

	for _, a := range w.Status.Addresses {
		if a.Type == "InternalIP" {
			n.IP = a.Address
			break
		}
	}

	return n
}

func (w wirePod) plain() Pod {
	return Pod{
		Name: w.Metadata.Name, Labels: w.Metadata.Labels, Annotations: w.Metadata.Annotations,
		Images: containerImages(w.Spec), HostIP: w.Status.HostIP, Phase: w.Status.Phase,
		Ready: slices.Contains(w.Status.Conditions, ready),
	}
}

func (w wireRollout) rollout(daemonSet bool) Rollout {
	r := Rollout{
		DaemonSet: daemonSet, Generation: w.Metadata.Generation, ObservedGeneration: w.Status.ObservedGeneration,
		Images: containerImages(w.Spec.Template.Spec),
	}

	st := w.Status
	if daemonSet {
		r.Desired, r.Updated, r.Available, r.Ready = st.DesiredNumberScheduled, st.UpdatedNumberScheduled, st.NumberAvailable, st.NumberReady
	} else {
		r.Desired, r.Updated, r.Available, r.Ready = st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, st.ReadyReplicas
	}

	return r
}

// Done is nil when every replica runs the current template and is
// available, else how far the rollout is.
func (r Rollout) Done() error {
	if r.ObservedGeneration < r.Generation {
		return errors.New("the controller has not seen the new spec yet")
	}

	if r.Updated < r.Desired || r.Available < r.Desired {
		return fmt.Errorf("%d of %d updated, %d available", r.Updated, r.Desired, r.Available)
	}

	return nil
}
