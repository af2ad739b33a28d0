package configs_test

import (
	"testing"
)

// TestValidateKubernetes covers what the Kubernetes components themselves
// would refuse at start, leaving a control plane or a kubelet down.
func TestValidateKubernetes(t *testing.T) {
	t.Parallel()

	runValidateCases(t, []validateCase{
		{
			name: "PodSecurity configuration",
			patch: `cluster: {apiServer: {admissionControl: [{name: PodSecurity, configuration: {
				apiVersion: pod-security.admission.config.k8s.io/v1, kind: PodSecurityConfiguration,
				defaults: {enforce: strict, enforce-version: "1.34", audit: restricted, warn-version: latest, warnings: x},
				exemptions: {namespaces: [kube-system, 7], users: [a]}}}]}}`,
			wantErrs: []string{
				`cluster.apiServer.admissionControl[0].configuration.defaults.warnings: unknown field "warnings" (did you mean "warn"?)`,
				`cluster.apiServer.admissionControl[0].configuration.defaults.enforce: invalid Pod Security level strict (expected privileged, baseline or restricted)`,
				`cluster.apiServer.admissionControl[0].configuration.defaults.enforce-version: invalid Pod Security version 1.34 (expected latest or v1.N, such as v1.34)`,
				`cluster.apiServer.admissionControl[0].configuration.exemptions.users: unknown field "users"`,
				`cluster.apiServer.admissionControl[0].configuration.exemptions.namespaces[1]: must be a name, not 7`,
			},
		},
		{
			name: "audit policy",
			patch: `cluster: {apiServer: {auditPolicy: {apiVersion: audit.k8s.io/v1beta1, kind: Policy, omitStage: [RequestReceived],
				rules: [{level: Everything}, {level: Metadata, omitStages: [Done]}, {levels: None}]}}}`,
			wantErrs: []string{
				`cluster.apiServer.auditPolicy.apiVersion: apiVersion must be audit.k8s.io/v1, not audit.k8s.io/v1beta1 (v1beta1 and v1alpha1 were removed in Kubernetes 1.24)`,
				`cluster.apiServer.auditPolicy.omitStage: unknown field "omitStage" (did you mean "omitStages"?)`,
				`cluster.apiServer.auditPolicy.rules[0].level: audit level "Everything" is not one of None, Metadata, Request, RequestResponse`,
				`cluster.apiServer.auditPolicy.rules[1].omitStages[0]: unknown audit stage Done (expected RequestReceived, ResponseStarted, ResponseComplete, Panic)`,
				`cluster.apiServer.auditPolicy.rules[2].levels: unknown field "levels" (did you mean "level"?)`,
				`cluster.apiServer.auditPolicy.rules[2].level: audit level "<nil>" is not one of None, Metadata, Request, RequestResponse`,
			},
		},
		{
			name:     "an audit policy needs rules",
			patch:    `cluster: {apiServer: {auditPolicy: {apiVersion: audit.k8s.io/v1, kind: Policy}}}`,
			wantErrs: []string{`cluster.apiServer.auditPolicy.rules: an audit policy needs at least one rule: kube-apiserver refuses a policy with none`},
		},
		{
			name:  "audit policy rules as a mapping",
			patch: `cluster: {apiServer: {auditPolicy: {apiVersion: audit.k8s.io/v1, kind: Policy, rules: {level: Metadata}}}}`,
			wantErrs: []string{
				`cluster.apiServer.auditPolicy.rules: rules must be a list of rules (- level: Metadata ...), not a mapping: kube-apiserver cannot load the policy`,
			},
		},
		{
			name:  "audit policy rules as a string, a rule as a string",
			patch: `cluster: {apiServer: {auditPolicy: {apiVersion: audit.k8s.io/v1, kind: Policy, rules: "level: Metadata"}}}`,
			wantErrs: []string{
				`cluster.apiServer.auditPolicy.rules: rules must be a list of rules (- level: Metadata ...), not the string "level: Metadata": kube-apiserver cannot load the policy`,
			},
		},
		{
			name:  "an audit rule that is not a mapping",
			patch: `cluster: {apiServer: {auditPolicy: {apiVersion: audit.k8s.io/v1, kind: Policy, rules: [Metadata, [a]]}}}`,
			wantErrs: []string{
				`cluster.apiServer.auditPolicy.rules[0]: a rule must be a mapping (level: Metadata ...), not the string "Metadata"`,
				`cluster.apiServer.auditPolicy.rules[1]: a rule must be a mapping (level: Metadata ...), not a list`,
			},
		},
		{
			name:  "scheduler config",
			patch: `cluster: {scheduler: {config: {apiVersion: kubescheduler.config.k8s.io/v1beta3, kind: KubeSchedulerConfiguration, clientConnection: {kubeconfig: /x}}}}`,
			wantErrs: []string{
				`cluster.scheduler.config.apiVersion: kube-scheduler reads kubescheduler.config.k8s.io/v1 only, not kubescheduler.config.k8s.io/v1beta3: write the config for it (or leave apiVersion out)`,
				`cluster.scheduler.config.clientConnection.kubeconfig: can't be overridden: talosbox sets the scheduler's kubeconfig`,
			},
		},
		{
			name:  "pod and service subnets",
			patch: `cluster: {network: {podSubnets: [10.244.0.0/25], serviceSubnets: [10.244.0.0/16]}}`,
			wantErrs: []string{
				`cluster.network.serviceSubnets[0]: service subnet 10.244.0.0/16 overlaps pod subnet 10.244.0.0/25 (podSubnets[0]): a Service address would also be a pod's`,
				`cluster.network.podSubnets[0]: pod subnet 10.244.0.0/25 is smaller than one node's share (/24, kube-controller-manager's node-cidr-mask-size-ipv4): no node could get pod addresses; use a larger subnet or set cluster.controllerManager.extraArgs["node-cidr-mask-size-ipv4"]`,
			},
		},
		{
			name:  "subnet families",
			patch: `cluster: {network: {podSubnets: ["fd00:10:244::/56"], serviceSubnets: [10.96.0.0/12]}}`,
			wantErrs: []string{
				`cluster.network: podSubnets (IPv6) and serviceSubnets (IPv4) must be of the same IP families, the same first: pods could not reach Services`,
			},
		},
		{
			name:  "service subnet sizes, and node masks too far apart",
			patch: `cluster: {network: {podSubnets: [172.16.0.0/12, "fd00::/32"], serviceSubnets: [10.96.0.0/29, "fd01::/56"]}}`,
			wantErrs: []string{
				`cluster.network.serviceSubnets[0]: service subnet 10.96.0.0/29 is too small: it must hold the DNS service's address (the 10th), so at least /28`,
				`cluster.network.podSubnets[1]: pod subnet fd00::/32 is split into /64 node subnets: kube-controller-manager refuses masks more than 16 bits apart (set node-cidr-mask-size-ipv6 to at most 48)`,
				`cluster.network.serviceSubnets[1]: service subnet fd01::/56 is too large: kube-apiserver allows IPv6 service ranges of /64 or longer`,
			},
		},
		{
			// Kubernetes 1.34's IPAddress allocator (MultiCIDRServiceAllocator
			// and DisableAllocatorDualWrite on by default) has no /12 limit.
			name:  "large service subnets with Kubernetes 1.34",
			patch: `cluster: {network: {podSubnets: [10.0.0.0/16, "fd00::/48"], serviceSubnets: [10.64.0.0/10, "fd01::/64"]}}`,
		},
		{
			name: "large service subnets with the bitmap allocator",
			patch: `cluster: {network: {podSubnets: [10.0.0.0/16, "fd00::/48"], serviceSubnets: [10.64.0.0/10, "fd01::/64"]},
				apiServer: {extraArgs: {feature-gates: "DisableAllocatorDualWrite=false"}}}`,
			wantErrs: []string{
				`cluster.network.serviceSubnets[0]: service subnet 10.64.0.0/10 is too large: kube-apiserver 1.34.12 allows at most /12 for this family (2^20 addresses) while it keeps the bitmap allocator (feature gates MultiCIDRServiceAllocator and DisableAllocatorDualWrite, both on by default from Kubernetes 1.34, lift the limit)`,
				`cluster.network.serviceSubnets[1]: service subnet fd01::/64 is too large: kube-apiserver 1.34.12 allows at most /108 for this family (2^20 addresses) while it keeps the bitmap allocator (feature gates MultiCIDRServiceAllocator and DisableAllocatorDualWrite, both on by default from Kubernetes 1.34, lift the limit)`,
			},
		},
		{
			name: "large service subnets with Kubernetes 1.33",
			patch: `{machine: {kubelet: {image: "ghcr.io/siderolabs/kubelet:v1.33.13"}}, cluster: {network: {serviceSubnets: [10.64.0.0/11]},
				apiServer: {image: "registry.k8s.io/kube-apiserver:v1.33.13"}, controllerManager: {image: "registry.k8s.io/kube-controller-manager:v1.33.13"},
				scheduler: {image: "registry.k8s.io/kube-scheduler:v1.33.13"}, proxy: {image: "registry.k8s.io/kube-proxy:v1.33.13"}}}`,
			wantErrs: []string{
				`cluster.network.serviceSubnets[0]: service subnet 10.64.0.0/11 is too large: kube-apiserver 1.33.13 allows at most /12 for this family (2^20 addresses) while it keeps the bitmap allocator (feature gates MultiCIDRServiceAllocator and DisableAllocatorDualWrite, both on by default from Kubernetes 1.34, lift the limit)`,
			},
		},
		{
			name:     "a larger node mask makes a small pod subnet fit",
			patch:    `cluster: {network: {podSubnets: [10.244.0.0/25]}, controllerManager: {extraArgs: {node-cidr-mask-size-ipv4: "26"}}}`,
			wantErrs: nil,
		},
		{
			name:     "KubePrism on the API server's port",
			patch:    `{machine: {features: {kubePrism: {enabled: true, port: 6443}}}, cluster: {controlPlane: {localAPIServerPort: 6443}}}`,
			wantErrs: []string{`machine.features.kubePrism.port: port 6443 is the API server's (cluster.controlPlane.localAPIServerPort): KubePrism needs a port of its own`},
		},
		{
			name:  "ports the node's own services listen on",
			patch: `{machine: {features: {kubePrism: {port: 10250}}}, cluster: {controlPlane: {localAPIServerPort: 50000}}}`,
			wantErrs: []string{
				`cluster.controlPlane.localAPIServerPort: port 50000 is apid's: the API server cannot listen there`,
				`machine.features.kubePrism.port: port 10250 is the kubelet's: KubePrism needs a port of its own`,
			},
		},
		{
			name: "versions and version skew",
			patch: `{machine: {kubelet: {image: "ghcr.io/siderolabs/kubelet:v1.34.1"}}, cluster: {apiServer: {image: "registry.k8s.io/kube-apiserver:v1.32.0"},
				controllerManager: {image: "registry.k8s.io/kube-controller-manager:v1.30.0"}, scheduler: {image: "registry.k8s.io/kube-scheduler:latest"},
				proxy: {image: "registry.k8s.io/kube-proxy:v1.40.0"}}}`,
			wantErrs: []string{
				`cluster.scheduler.image: cannot tell the Kubernetes version of image "registry.k8s.io/kube-scheduler:latest": its tag must be a version such as v1.34.12`,
				`cluster.proxy.image: version of Kubernetes 1.40.0 is too new: talosbox runs 1.29 to 1.34.x (image "registry.k8s.io/kube-proxy:v1.40.0")`,
				`machine.kubelet.image: kubelet 1.34.1 is 2 minor versions newer than kube-apiserver 1.32.0: a component must never be newer than the API server (upgrade the API server first: talosctl upgrade-k8s)`,
			},
			wantWarns: []string{
				`cluster.controllerManager.image: kube-controller-manager 1.30.0 is 2 minor versions older than kube-apiserver 1.32.0: Kubernetes supports at most 1`,
			},
		},
		{
			// Seed 004's rollback: the API server's image goes back first.
			name:  "a rollback by config passes one minor of skew",
			patch: `cluster: {apiServer: {image: "registry.k8s.io/kube-apiserver:v1.33.13"}}`,
			wantWarns: []string{
				`cluster.controllerManager.image: kube-controller-manager 1.34.12 is newer than kube-apiserver 1.33.13, which Kubernetes' skew policy does not support: upgrade the API server too, or roll this component back`,
				`cluster.scheduler.image: kube-scheduler 1.34.12 is newer than kube-apiserver 1.33.13, which Kubernetes' skew policy does not support: upgrade the API server too, or roll this component back`,
				`cluster.proxy.image: kube-proxy 1.34.12 is newer than kube-apiserver 1.33.13, which Kubernetes' skew policy does not support: upgrade the API server too, or roll this component back`,
				`machine.kubelet.image: kubelet 1.34.12 is newer than kube-apiserver 1.33.13, which Kubernetes' skew policy does not support: upgrade the API server too, or roll this component back`,
			},
		},
		{
			name:     "a Kubernetes too old",
			base:     "worker",
			patch:    `machine: {kubelet: {image: "ghcr.io/siderolabs/kubelet:v1.28.4"}}`,
			wantErrs: []string{`machine.kubelet.image: version of Kubernetes 1.28.4 is too old: talosbox runs 1.29 to 1.34.x (image "ghcr.io/siderolabs/kubelet:v1.28.4")`},
		},
		{
			name: "flags the component that will run does not know or cannot parse",
			patch: `{machine: {kubelet: {extraArgs: {max-pods: lots, rotate-server-certificates: "true", cloud-config: /x}}},
				cluster: {apiServer: {extraArgs: {audit-log-maxage: "30d", enable-admision-plugins: NodeRestriction, kubelet-port: "10250",
					feature-gates: "ServerSideApply=true,WatchList=true,kube:WatchListt=true,other:Unknown=true,ResilientWatchCacheInitialization=false"}},
				controllerManager: {extraArgs: {node-monitor-grace-period: 40}},
				scheduler: {image: "registry.k8s.io/kube-scheduler:v1.33.13", extraArgs: {coordinated-leadership-lease-duration: 15s}}}}`,
			wantErrs: []string{
				`machine.kubelet.extraArgs["cloud-config"]: kubelet 1.34.12 has no flag --cloud-config: it would refuse to start`,
				`machine.kubelet.extraArgs["max-pods"]: invalid value "lots" for --max-pods (int32): want an integer`,
				`cluster.apiServer.extraArgs["audit-log-maxage"]: invalid value "30d" for --audit-log-maxage (int): want an integer`,
				`cluster.apiServer.extraArgs["enable-admision-plugins"]: kube-apiserver 1.34.12 has no flag --enable-admision-plugins: it would refuse to start (did you mean "enable-admission-plugins"?)`,
				`cluster.apiServer.extraArgs["feature-gates"]: feature gate ResilientWatchCacheInitialization is locked to true in kube-apiserver 1.34.12: it would refuse to start with false`,
				`cluster.apiServer.extraArgs["feature-gates"]: kube-apiserver 1.34.12 has no feature gate "ServerSideApply": it would refuse to start`,
				`cluster.apiServer.extraArgs["feature-gates"]: kube-apiserver 1.34.12 has no feature gate "WatchListt": it would refuse to start (did you mean "WatchList"?)`,
				`cluster.controllerManager.extraArgs["node-monitor-grace-period"]: invalid value "40" for --node-monitor-grace-period (duration): want a duration such as "5s"`,
				`cluster.scheduler.extraArgs["coordinated-leadership-lease-duration"]: kube-scheduler 1.33.13 has no flag --coordinated-leadership-lease-duration: it would refuse to start`,
			},
			wantWarns: []string{`cluster.apiServer.extraArgs["kubelet-port"]: --kubelet-port is deprecated in kube-apiserver 1.34.12`},
		},
		{
			// Flags of configs carried over from older clusters: said to be
			// removed, and when (configs/validate_kubeflags_removed.go).
			name: "flags removed in earlier minors",
			patch: `{machine: {kubelet: {extraArgs: {image-pull-progress-deadline: 2m, network-plugin: cni, keep-terminated-pod-volumes: "false", logtostderr: "true"}}},
				cluster: {apiServer: {extraArgs: {log-dir: /var/log}}}}`,
			wantErrs: []string{
				`machine.kubelet.extraArgs["image-pull-progress-deadline"]: flag --image-pull-progress-deadline was removed in Kubernetes 1.24 (kubernetes/kubernetes#106907): kubelet 1.34.12 would refuse to start`,
				`machine.kubelet.extraArgs["keep-terminated-pod-volumes"]: flag --keep-terminated-pod-volumes was removed in Kubernetes 1.31 (kubernetes/kubernetes#122082): kubelet 1.34.12 would refuse to start`,
				`machine.kubelet.extraArgs["logtostderr"]: flag --logtostderr was removed in Kubernetes 1.26 (kubernetes/kubernetes#112120): kubelet 1.34.12 would refuse to start`,
				`machine.kubelet.extraArgs["network-plugin"]: flag --network-plugin was removed in Kubernetes 1.24 (kubernetes/kubernetes#106907): kubelet 1.34.12 would refuse to start`,
				`cluster.apiServer.extraArgs["log-dir"]: flag --log-dir was removed in Kubernetes 1.26 (kubernetes/kubernetes#112120): kube-apiserver 1.34.12 would refuse to start`,
			},
		},
		{
			name: "component configs as the components' own types read them",
			patch: `{machine: {kubelet: {extraConfig: {maxPods: "250", evictionHard: ["memory.available<100Mi"], syncFrequency: 60, serializeImagePulls: false,
					featureGates: {WatchList: true, NoSuchGate: true}, shutdownGracePeriod: 30s, maxPod: 10}}},
				cluster: {scheduler: {config: {profiles: [{schedulerName: default-scheduler, plugin: {}}], parallelism: "16"}}}}`,
			wantErrs: []string{
				`machine.kubelet.extraConfig.evictionHard: want a mapping, got a list: kubelet 1.34.12 would not start with it`,
				`machine.kubelet.extraConfig.maxPods: want an integer, got "250": kubelet 1.34.12 would not start with it`,
				`machine.kubelet.extraConfig.syncFrequency: want a duration such as "30s", got 60: kubelet 1.34.12 would not start with it`,
				`machine.kubelet.extraConfig.featureGates: kubelet 1.34.12 has no feature gate "NoSuchGate": it would refuse to start`,
				`cluster.scheduler.config.parallelism: want an integer, got "16": kube-scheduler 1.34.12 would not start with it`,
				`cluster.scheduler.config.profiles[0].plugin: unknown field "plugin" (did you mean "plugins"?): kube-scheduler 1.34.12 refuses a config with fields it does not know`,
			},
			wantWarns: []string{`machine.kubelet.extraConfig.maxPod: unknown field "maxPod" (did you mean "maxPods"?): kubelet 1.34.12 ignores it`},
		},
		{
			name: "flags that would disagree with what talosbox derives from the config",
			patch: `cluster: {apiServer: {extraArgs: {secure-port: "6444", service-cluster-ip-range: "10.96.0.1/12", enable-admission-plugins: "NodeRestriction,PodSecurityPolicy,AlwaysPullImage"}},
				controllerManager: {extraArgs: {cluster-cidr: "10.0.0.0/8"}}, proxy: {extraArgs: {cluster-cidr: "10.244.0.0/16"}}}`,
			wantErrs: []string{
				`cluster.apiServer.extraArgs["secure-port"]: talosbox sets --secure-port=6443 from cluster.controlPlane.localAPIServerPort: set that instead (a different value here would split the cluster's view of its network)`,
				`cluster.controllerManager.extraArgs["cluster-cidr"]: talosbox sets --cluster-cidr=10.244.0.0/16 from cluster.network.podSubnets: set that instead (a different value here would split the cluster's view of its network)`,
				`cluster.apiServer.extraArgs["enable-admission-plugins"]: kube-apiserver 1.34.12 has no admission plugin "PodSecurityPolicy": it would refuse to start (did you mean "PodSecurity"?)`,
				`cluster.apiServer.extraArgs["enable-admission-plugins"]: kube-apiserver 1.34.12 has no admission plugin "AlwaysPullImage": it would refuse to start (did you mean "AlwaysPullImages"?)`,
			},
		},
		{
			name: "the kubelet's resource maps",
			patch: `machine: {kubelet: {extraConfig: {systemReserved: {memory: lots, gpu: "1"}, kubeReserved: {cpu: 500m},
				evictionHard: {memory.available: 5%, nodefs.available: "120%", disk.available: 1Gi, imagefs.available: "10Gi"}},
				credentialProviderConfig: {apiVersion: kubelet.config.k8s.io/v1, kind: CredentialProviderConfig}}}`,
			wantErrs: []string{
				`machine.kubelet.extraConfig.systemReserved["gpu"]: the kubelet reserves cpu, memory, ephemeral-storage and pid only, not "gpu"`,
				`machine.kubelet.extraConfig.systemReserved["memory"]: invalid quantity "lots": want a number with an optional suffix such as 250m, 0.5, 512Mi or 2G`,
				`machine.kubelet.extraConfig.evictionHard["disk.available"]: unknown eviction signal "disk.available" (expected one of memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, containerfs.available, containerfs.inodesFree, pid.available, allocatableMemory.available)`,
				`machine.kubelet.extraConfig.evictionHard["nodefs.available"]: invalid percentage "120%"`,
			},
			wantWarns: []string{`machine.kubelet.credentialProviderConfig: has no effect: talosbox nodes carry no image credential provider plugins; use machine.registries.config auth instead`},
		},
		{
			name:  "extraArgs written as flags",
			patch: `cluster: {apiServer: {extraArgs: {"--v": "2", "event-ttl=2h": "", "": x, etcd-servers: "https://x:2379"}}}`,
			wantErrs: []string{
				`cluster.apiServer.extraArgs[""]: extra arg name is empty`,
				`cluster.apiServer.extraArgs["--v"]: write the flag without leading dashes: "v", not "--v" (talosbox adds them)`,
				`cluster.apiServer.extraArgs["etcd-servers"]: extra arg "etcd-servers" is not allowed: talosbox sets it itself`,
				`cluster.apiServer.extraArgs["event-ttl=2h"]: invalid flag name "event-ttl=2h": the value goes after the colon, not in the name`,
			},
		},
	})
}
