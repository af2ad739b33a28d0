// Package k8s holds the Kubernetes resources: the control plane's configs, secrets and static pods, the kubelet's config and spec, the node's name and IP, KubePrism and the bootstrap manifests, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package k8s
