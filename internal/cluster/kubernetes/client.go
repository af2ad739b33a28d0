// Package kubernetes is the client side of a cluster's Kubernetes API that
// talosctl's health checks, upgrade-k8s and convert-k8s share: a client
// built from the admin kubeconfig a control plane hands out, reading the
// few fields those operations look at.
//
// It is client-go's dynamic client (which the node side already links for
// draining and manifests) rather than the typed clientset: the typed one
// would pull every API group's types into the binary, and with them their
// init cost on every applet's start.
package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RequestTimeout bounds each request, so a check that polls an API server
// that stopped answering fails its attempt instead of hanging.
const RequestTimeout = 10 * time.Second

var (
	nodesResource      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	podsResource       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	daemonSetsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
	deploymentResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// Client talks to one API server.
type Client struct {
	config *rest.Config
	dyn    dynamic.Interface
}

// New is a client for config.
func New(config *rest.Config) (*Client, error) {
	config = rest.CopyConfig(config)
	if config.Timeout == 0 {
		config.Timeout = RequestTimeout
	}

	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}

	return &Client{config: config, dyn: dyn}, nil
}

// FromKubeconfig is a client for kubeconfig's current context. A server,
// when given (https://host:port), replaces the context's.
func FromKubeconfig(kubeconfig []byte, server string) (*Client, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}

	overrides := &clientcmd.ConfigOverrides{}
	if server != "" {
		overrides.ClusterInfo.Server = strings.TrimSuffix(server, "/")
	}

	rc, err := clientcmd.NewDefaultClientConfig(*cfg, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}

	return New(rc)
}

// WithServer is the same client aimed at another address of the API
// server (upgrade-k8s's --endpoint).
func (c *Client) WithServer(server string) (*Client, error) {
	rc := rest.CopyConfig(c.config)
	rc.Host = strings.TrimSuffix(server, "/")

	return New(rc)
}

// Server is the API server's address.
func (c *Client) Server() string { return c.config.Host }

// IsNotFound: the object (or its kind) does not exist.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// Nodes lists the cluster's nodes.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	list, err := c.dyn.Resource(nodesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}

	wire, err := decodeItems[wireNode](list)

	return mapSlice(wire, wireNode.plain), err
}

// Pods lists namespace's pods that match selector (a label selector, "" for
// all).
func (c *Client) Pods(ctx context.Context, namespace, selector string) ([]Pod, error) {
	list, err := c.dyn.Resource(podsResource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}

	wire, err := decodeItems[wirePod](list)

	return mapSlice(wire, wirePod.plain), err
}

// ComponentPods lists kube-system's pods of one component (label k8s-app).
func (c *Client) ComponentPods(ctx context.Context, component string) ([]Pod, error) {
	return c.Pods(ctx, "kube-system", "k8s-app="+component)
}

// DaemonSet reads a DaemonSet's rollout; IsNotFound when there is none.
func (c *Client) DaemonSet(ctx context.Context, namespace, name string) (*Rollout, error) {
	return c.rollout(ctx, daemonSetsResource, namespace, name)
}

// Deployment reads a Deployment's rollout; IsNotFound when there is none.
func (c *Client) Deployment(ctx context.Context, namespace, name string) (*Rollout, error) {
	return c.rollout(ctx, deploymentResource, namespace, name)
}

func (c *Client) rollout(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*Rollout, error) {
	u, err := c.dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}

	var w wireRollout
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", gvr.Resource, namespace, name, err)
	}

	r := w.rollout(gvr == daemonSetsResource)

	return &r, nil
}

// DeleteDaemonSet deletes a DaemonSet, its pods going in the background as
// kubectl's default cascade does; IsNotFound when there is none.
func (c *Client) DeleteDaemonSet(ctx context.Context, namespace, name string) error {
	bg := metav1.DeletePropagationBackground

	return c.dyn.Resource(daemonSetsResource).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
}

// decodeItems decodes a list's items into their wire type.
func decodeItems[W any](list *unstructured.UnstructuredList) ([]W, error) {
	out := make([]W, len(list.Items))

	for i, item := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &out[i]); err != nil {
			return nil, fmt.Errorf("%s %s: %w", item.GetKind(), item.GetName(), err)
		}
	}

	return out, nil
}

func mapSlice[A, B any](in []A, f func(A) B) []B {
	out := make([]B, len(in))
	for i, a := range in {
		out[i] = f(a)
	}

	return out
}
