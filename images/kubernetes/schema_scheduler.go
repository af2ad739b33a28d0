//go:build ignore

// The scheduler's and the kubelet's vocabularies for kube-config-schema
// (schema.go): what their own code accepts, asked of that code.
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// extensionPoints are the scheduler framework's, by their config names.
var extensionPoints = []string{
	"preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
	"reserve", "permit", "preBind", "bind", "postBind",
}

// schedulerPlugins asks the scheduler's own framework, for every in-tree
// plugin and extension point, whether a profile enabling the plugin there
// builds: the framework refuses a plugin at a point it does not extend
// ("plugin %q does not extend %s plugin"), as kube-scheduler does at start.
// The plugins get their default arguments and a client that is never
// started.
func schedulerPlugins() map[string][]string {
	defaults, err := latest.Default()
	if err != nil {
		die("scheduler defaults: %v", err)
	}

	client, err := clientset.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		die("scheduler client: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	registry := plugins.NewInTreeRegistry()
	out := map[string][]string{}

	for name := range registry {
		out[name] = []string{}

		for _, point := range extensionPoints {
			profile := schedconfig.KubeSchedulerProfile{
				SchedulerName: "probe",
				Plugins:       &schedconfig.Plugins{},
				PluginConfig:  defaults.Profiles[0].PluginConfig,
			}
			set := pluginSet(profile.Plugins, point)
			set.Enabled = []schedconfig.Plugin{{Name: name}}

			_, err := frameworkruntime.NewFramework(ctx, registry, &profile,
				frameworkruntime.WithClientSet(client),
				frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
				frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot()))

			switch {
			case err != nil && strings.Contains(err.Error(), "does not extend"):
				continue
			case err != nil && strings.Contains(err.Error(), "initializing plugin"):
				// The probe could not tell: a list that said so would be a guess.
				die("scheduler plugin %s: %v", name, err)
			}

			out[name] = append(out[name], point)
		}
	}

	return out
}

func pluginSet(p *schedconfig.Plugins, point string) *schedconfig.PluginSet {
	sets := map[string]*schedconfig.PluginSet{
		"preEnqueue": &p.PreEnqueue, "queueSort": &p.QueueSort, "preFilter": &p.PreFilter, "filter": &p.Filter,
		"postFilter": &p.PostFilter, "preScore": &p.PreScore, "score": &p.Score, "reserve": &p.Reserve,
		"permit": &p.Permit, "preBind": &p.PreBind, "bind": &p.Bind, "postBind": &p.PostBind,
	}

	return sets[point]
}

// kubeletPolicies are the names the kubelet's CPU, memory and topology
// managers know: the CPU and memory managers' constructors refuse any
// other ("unknown policy"), and ValidateKubeletConfiguration the topology
// manager's.
func kubeletPolicies() map[string][]string {
	p := map[string][]string{
		"cpuManagerPolicy":    {string(cpumanager.PolicyNone), string(cpumanager.PolicyStatic)},
		"memoryManagerPolicy": memoryManagerPolicies,
		"topologyManagerPolicy": {kubeletconfig.NoneTopologyManagerPolicy, kubeletconfig.BestEffortTopologyManagerPolicy,
			kubeletconfig.RestrictedTopologyManagerPolicy, kubeletconfig.SingleNumaNodeTopologyManagerPolicy},
		"topologyManagerScope": {kubeletconfig.ContainerTopologyManagerScope, kubeletconfig.PodTopologyManagerScope},
	}

	for _, names := range p {
		slices.Sort(names)
	}

	return p
}

// memoryManagerPolicies are the memory manager's policy names on Linux,
// which it does not export (1.33 exports neither; "BestEffort" is
// Windows'): its NewManager refuses any other.
var memoryManagerPolicies = []string{"None", "Static"}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kube-config-schema: "+format+"\n", args...)
	os.Exit(1)
}
