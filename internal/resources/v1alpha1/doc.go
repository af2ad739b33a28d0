// Package v1alpha1 holds the resources Talos keeps under v1alpha1: services, time sync and the 0.9 bootstrap status, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package v1alpha1
