// Package k8s runs Kubernetes on a node the way Talos does: controllers
// on the node's bus turn the machine config into the control plane's
// configs, secrets and static pods (served to the kubelet over loopback),
// the kubelet's spec and service, and the bootstrap manifests applied to
// the API server. Every resource carries Talos's type name and namespace,
// so `talosctl get staticpods` and Talos habits work unchanged.
package k8s
