package configs_test

import (
	"testing"
)

// TestValidateComponentNames covers what the Kubernetes components look up
// by name at start and exit on: the kubelet's resource manager policies,
// kube-scheduler's plugins at their extension points,
// kube-controller-manager's controllers. The names are the components' own
// (configs/kubeschema, dumped from each version's binary by make images),
// and so are the messages.
func TestValidateComponentNames(t *testing.T) {
	t.Parallel()

	runValidateCases(t, []validateCase{
		{
			name:     "an unknown CPU manager policy",
			patch:    `machine: {kubelet: {extraConfig: {cpuManagerPolicy: turbo}}}`,
			wantErrs: []string{`machine.kubelet.extraConfig.cpuManagerPolicy: kubelet 1.34.12 refuses it: unknown policy: "turbo" (it knows none, static)`},
		},
		{
			name:     "the CPU manager's policy names are lower case",
			patch:    `machine: {kubelet: {extraConfig: {cpuManagerPolicy: Static}}}`,
			wantErrs: []string{`machine.kubelet.extraConfig.cpuManagerPolicy: kubelet 1.34.12 refuses it: unknown policy: "Static" (it knows none, static)`},
		},
		{
			name:     "the memory manager's are capitalised",
			patch:    `machine: {kubelet: {extraConfig: {memoryManagerPolicy: static}}}`,
			wantErrs: []string{`machine.kubelet.extraConfig.memoryManagerPolicy: kubelet 1.34.12 refuses it: unknown policy: "static" (it knows None, Static)`},
		},
		{
			name:  "topology manager policy and scope",
			patch: `machine: {kubelet: {extraConfig: {topologyManagerPolicy: numa, topologyManagerScope: node}}}`,
			wantErrs: []string{
				`machine.kubelet.extraConfig.topologyManagerPolicy: kubelet 1.34.12 refuses it: invalid configuration: topologyManagerPolicy (--topology-manager-policy) "numa" must be one of: ["best-effort" "none" "restricted" "single-numa-node"]`,
				`machine.kubelet.extraConfig.topologyManagerScope: kubelet 1.34.12 refuses it: invalid configuration: topologyManagerScope (--topology-manager-scope) "node" must be one of: ["container" "pod"]`,
			},
		},
		{
			name:     "the kubelet of the configured version judges: 1.33",
			patch:    `machine: {kubelet: {image: "ghcr.io/siderolabs/kubelet:v1.33.13", extraConfig: {cpuManagerPolicy: turbo}}}`,
			wantErrs: []string{`machine.kubelet.extraConfig.cpuManagerPolicy: kubelet 1.33.13 refuses it: unknown policy: "turbo" (it knows none, static)`},
		},
		{
			name:     "an unknown controller",
			patch:    `cluster: {controllerManager: {extraArgs: {controllers: "*,notacontroller"}}}`,
			wantErrs: []string{`cluster.controllerManager.extraArgs["controllers"]: kube-controller-manager 1.34.12 refuses it: "notacontroller" is not in the list of known controllers`},
		},
		{
			name:  "controllers misspelt, disabled or not",
			patch: `cluster: {controllerManager: {extraArgs: {controllers: "*,-bootstrap-signer-controler,node-ipam-controler"}}}`,
			wantErrs: []string{
				`cluster.controllerManager.extraArgs["controllers"]: kube-controller-manager 1.34.12 refuses it: "bootstrap-signer-controler" is not in the list of known controllers (did you mean "bootstrap-signer-controller"?)`,
				`cluster.controllerManager.extraArgs["controllers"]: kube-controller-manager 1.34.12 refuses it: "node-ipam-controler" is not in the list of known controllers (did you mean "node-ipam-controller"?)`,
			},
		},
		{
			name:     "a space is part of the name, as the controller-manager splits the list",
			patch:    `cluster: {controllerManager: {extraArgs: {controllers: "*, tokencleaner"}}}`,
			wantErrs: []string{`cluster.controllerManager.extraArgs["controllers"]: kube-controller-manager 1.34.12 refuses it: " tokencleaner" is not in the list of known controllers (did you mean "tokencleaner"?)`},
		},
		{
			name: "an unknown scheduler plugin",
			patch: `cluster: {scheduler: {config: {profiles: [{schedulerName: default-scheduler, plugins: {
				filter: {enabled: [{name: NotAPlugin}, {name: NodeAfinity}]}, multiPoint: {enabled: [{name: Coscheduling}]}}}]}}}`,
			wantErrs: []string{
				`cluster.scheduler.config.profiles[0].plugins.filter.enabled[0].name: kube-scheduler 1.34.12 refuses it: FilterPlugin "NotAPlugin" does not exist`,
				`cluster.scheduler.config.profiles[0].plugins.filter.enabled[1].name: kube-scheduler 1.34.12 refuses it: FilterPlugin "NodeAfinity" does not exist (did you mean "NodeAffinity"?)`,
				`cluster.scheduler.config.profiles[0].plugins.multiPoint.enabled[0].name: kube-scheduler 1.34.12 refuses it: PreFilterPlugin "Coscheduling" does not exist`,
			},
		},
		{
			name: "a plugin at an extension point it does not extend",
			patch: `cluster: {scheduler: {config: {profiles: [{schedulerName: default-scheduler}, {schedulerName: other, plugins: {
				score: {enabled: [{name: NodeName, weight: 1}]}, bind: {enabled: [{name: PrioritySort}]}}}]}}}`,
			wantErrs: []string{
				`cluster.scheduler.config.profiles[1].plugins.score.enabled[0].name: kube-scheduler 1.34.12 refuses it: plugin "NodeName" does not extend ScorePlugin plugin (it is a filter plugin)`,
				`cluster.scheduler.config.profiles[1].plugins.bind.enabled[0].name: kube-scheduler 1.34.12 refuses it: plugin "PrioritySort" does not extend BindPlugin plugin (it is a queueSort plugin)`,
			},
		},
		{
			// What a rule written from the documentation would refuse, and
			// the components accept: controller aliases (bootstrapsigner is
			// bootstrap-signer-controller's old name), a controller
			// disabled by default named to enable it, the memory manager's
			// None (which it does not export), a disabled plugin the
			// registry does not have, a plugin at every point it extends
			// (InterPodAffinity is a preFilter, filter, preScore and score
			// plugin), multiPoint with a plugin of a few points.
			name: "what the components accept",
			patch: `machine: {kubelet: {extraConfig: {cpuManagerPolicy: static, memoryManagerPolicy: None, topologyManagerPolicy: single-numa-node}}}
cluster: {controllerManager: {extraArgs: {controllers: "*,-bootstrapsigner,tokencleaner,selinux-warning-controller,-csrsigning"}},
  scheduler: {config: {profiles: [{schedulerName: default-scheduler, plugins: {
    preFilter: {enabled: [{name: InterPodAffinity}]}, filter: {enabled: [{name: InterPodAffinity}], disabled: [{name: NotAPlugin}, {name: "*"}]},
    preScore: {enabled: [{name: InterPodAffinity}]}, score: {enabled: [{name: InterPodAffinity, weight: 2}]},
    multiPoint: {enabled: [{name: DefaultPreemption}, {name: ImageLocality}]}}}]}}}`,
		},
	})
}
