// Package resources lists every resource type a talosbox node publishes.
// The types themselves live in one package per group, named and grouped
// as Talos groups them (config, runtime, v1alpha1, k8s, network, cluster,
// etcd, block, cri, hardware, secrets): producers and consumers both import the group, so no
// package copies another's names or imports a producer to read its
// output.
package resources

import (
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/cri"
	"github.com/talosbox/talosbox/internal/resources/etcd"
	"github.com/talosbox/talosbox/internal/resources/hardware"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/secrets"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

// Definitions are every group's definitions, in a fresh slice: what a
// node registers for `talosctl get`, whichever of its controllers run.
func Definitions() []bus.Definition {
	var all []bus.Definition
	for _, group := range [][]bus.Definition{
		config.Definitions, runtime.Definitions, v1alpha1.Definitions, k8s.Definitions,
		network.Definitions, cluster.Definitions, etcd.Definitions, block.Definitions, cri.Definitions, hardware.Definitions,
		secrets.Definitions,
	} {
		all = append(all, group...)
	}

	return all
}
