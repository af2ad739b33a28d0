package configs_test

import "testing"

// TestValidateRepeatedFlags: a list in extraArgs repeats the flag, which
// is accepted for the flags the component adds up (list, map and array
// types; etcd's feature gates) and refused for the others, which would
// silently keep the last value; each value is checked as a single one is.
func TestValidateRepeatedFlags(t *testing.T) {
	t.Parallel()

	runValidateCases(t, []validateCase{
		{
			name: "repeatable flags",
			patch: `{machine: {kubelet: {extraArgs: {node-labels: [a=b, c=d], feature-gates: [AllBeta=true, AllAlpha=false], eviction-hard: ["memory.available<100Mi"]}}},
				cluster: {apiServer: {extraArgs: {enable-admission-plugins: [NodeRestriction, AlwaysPullImages], runtime-config: [api/all=true], tls-sni-cert-key: [/a.crt,/a.key, /b.crt,/b.key]}},
				controllerManager: {extraArgs: {controllers: ["*", "-ttl"]}},
				scheduler: {extraArgs: {authorization-always-allow-paths: [/healthz, /readyz]}},
				proxy: {extraArgs: {ipvs-exclude-cidrs: [10.0.0.0/8, 192.168.0.0/16]}},
				etcd: {extraArgs: {feature-gates: [InitialCorruptCheck=true, CompactHashCheck=true]}}}}`,
		},
		{
			name: "one-item lists are the flag once",
			patch: `{machine: {kubelet: {extraArgs: {register-with-taints: ["a=b:NoSchedule"]}}},
				cluster: {apiServer: {extraArgs: {v: ["2"]}}, etcd: {extraArgs: {snapshot-count: ["5000"]}}}}`,
		},
		{
			name: "flags that keep the last value",
			patch: `{machine: {kubelet: {extraArgs: {register-with-taints: ["a=b:NoSchedule", "c:NoExecute"]}}},
				cluster: {apiServer: {extraArgs: {v: ["2", "3"]}}, scheduler: {extraArgs: {leader-elect: ["true", "false"]}},
				etcd: {extraArgs: {snapshot-count: ["1", "2"]}}}}`,
			wantErrs: []string{
				`cluster.etcd.extraArgs["snapshot-count"]: "snapshot-count" is given 2 times (a list), but etcd keeps only the last value of --snapshot-count: write one value (only feature-gates takes repeats)`,
				`machine.kubelet.extraArgs["register-with-taints"]: --register-with-taints is given 2 times (a list), but kubelet 1.34.12 keeps only the last value of a []v1.Taint flag: write one value (only list, map and array flags take repeats)`,
				`cluster.apiServer.extraArgs["v"]: --v is given 2 times (a list), but kube-apiserver 1.34.12 keeps only the last value of a Level flag: write one value (only list, map and array flags take repeats)`,
				`cluster.scheduler.extraArgs["leader-elect"]: --leader-elect is given 2 times (a list), but kube-scheduler 1.34.12 keeps only the last value of a bool flag: write one value (only list, map and array flags take repeats)`,
			},
		},
		{
			name: "each value is checked",
			patch: `{machine: {kubelet: {extraArgs: {feature-gates: [AllBeta=true, NoSuchGate=true], node-labels: [a=b, kubernetes.io/x=y]}}},
				cluster: {apiServer: {extraArgs: {enable-admission-plugins: [NodeRestriction, NoSuchPlugin]}},
				etcd: {extraArgs: {feature-gates: [InitialCorruptCheck=true, NoSuchGate=true]}}}}`,
			wantErrs: []string{
				`machine.kubelet.extraArgs["node-labels"]: the kubelet refuses to set label kubernetes.io/x on its node (kubernetes.io and k8s.io labels are limited to its own set): set it in machine.nodeLabels instead`,
				`cluster.etcd.extraArgs["feature-gates"]: feature-gates="NoSuchGate=true": unknown feature gate "NoSuchGate" (known: AllAlpha, AllBeta, CompactHashCheck, FastLeaseKeepAlive, InitialCorruptCheck, LeaseCheckpoint, LeaseCheckpointPersist, PriorityRequest, SetMemberLocalAddr, StopGRPCServiceOnDefrag, TxnModeWriteWithSharedBuffer)`,
				`machine.kubelet.extraArgs["feature-gates"][1]: kubelet 1.34.12 has no feature gate "NoSuchGate": it would refuse to start`,
				`cluster.apiServer.extraArgs["enable-admission-plugins"]: kube-apiserver 1.34.12 has no admission plugin "NoSuchPlugin": it would refuse to start`,
			},
		},
		{
			name:  "denied and derived flags, as lists",
			patch: `{cluster: {apiServer: {extraArgs: {etcd-servers: [https://a:2379, https://b:2379], secure-port: ["6444"], service-cluster-ip-range: []}}, etcd: {extraArgs: {name: []}}}}`,
			wantErrs: []string{
				`cluster.etcd.extraArgs["name"]: "name": managed by talosbox, not settable in extraArgs`,
				`cluster.apiServer.extraArgs["etcd-servers"]: extra arg "etcd-servers" is not allowed: talosbox sets it itself`,
				`cluster.apiServer.extraArgs["secure-port"]: talosbox sets --secure-port=6443 from cluster.controlPlane.localAPIServerPort: set that instead (a different value here would split the cluster's view of its network)`,
				`cluster.apiServer.extraArgs["service-cluster-ip-range"]: talosbox sets --service-cluster-ip-range=10.96.0.0/12 from cluster.network.serviceSubnets: set that instead (a different value here would split the cluster's view of its network)`,
			},
			wantWarns: []string{`cluster.apiServer.extraArgs["service-cluster-ip-range"]: an empty list gives kube-apiserver no --service-cluster-ip-range at all: a value talosbox sets for it is dropped too (as in Talos)`},
		},
		{
			name:      "an empty list leaves the flag out",
			patch:     `{cluster: {scheduler: {extraArgs: {authorization-always-allow-paths: []}}}}`,
			wantWarns: []string{`cluster.scheduler.extraArgs["authorization-always-allow-paths"]: an empty list gives kube-scheduler no --authorization-always-allow-paths at all: a value talosbox sets for it is dropped too (as in Talos)`},
		},
	})
}
