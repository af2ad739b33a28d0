// Package render turns a machine config into what a node runs Kubernetes
// with: the control-plane components' configs and static pods, the files
// they read, the kubelet's command line and configuration, the node IP
// choice and the bootstrap manifests' options. Everything here is a pure
// function of its inputs, with no bus, client or file system, so the node
// (internal/k8s) and talosctl (validate --render, internal/render) share
// one renderer and cannot disagree about what a config means.
package render
