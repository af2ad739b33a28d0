package configs_test

import "testing"

// TestValidateGoldenMisc covers the smaller sections: kubelet, disks, time,
// kernel settings, features, control-plane components and manifests.
func TestValidateGoldenMisc(t *testing.T) {
	t.Parallel()

	runValidateCases(t, []validateCase{
		{
			name: "kubelet",
			patch: `machine: {kubelet: {image: "ghcr.io/siderolabs/kubelet:v1.34.1", clusterDNS: [10.96.0.300],
				extraMounts: [{source: /a}, {destination: var/lib}], nodeIP: {validSubnets: ["10.0.0.0/8", "!10.0.0.0/40"]}}}`,
			wantErrs: []string{
				`machine.kubelet.clusterDNS[0]: invalid cluster DNS address "10.96.0.300"`,
				`machine.kubelet.extraMounts[0].destination: mount destination is required`,
				`machine.kubelet.extraMounts[1].destination: mount destination "var/lib" must be an absolute path`,
				`machine.kubelet.extraMounts[1].source: a bind mount needs a source path`,
				`machine.kubelet.nodeIP.validSubnets[1]: invalid subnet "!10.0.0.0/40"`,
			},
		},
		{
			name:  "disks",
			patch: `machine: {disks: [{device: sdb, partitions: [{mountpoint: /var/mnt/a, size: 10 GiB}, {mountpoint: mnt, size: lots}]}]}`,
			wantErrs: []string{
				`machine.disks[0].device: disk device "sdb" must be a path under /dev/`,
				`machine.disks[0].partitions[1].mountpoint: partition mountpoint "mnt" must be an absolute path`,
				`machine.disks[0].partitions[1].size: invalid size "lots": want a size such as "10 GiB", "500MB" or a number of bytes`,
			},
		},
		{
			name:     "time servers",
			patch:    `machine: {time: {servers: [time.cloudflare.com, 10.0.0.1, "nts://time.example.com", "ntp server"]}}`,
			wantErrs: []string{`machine.time.servers[3]: invalid time server "ntp server": must be an IP address or a host name`},
		},
		{
			name:      "time servers while sync is disabled",
			patch:     `machine: {time: {disabled: true, servers: [time.cloudflare.com]}}`,
			wantWarns: []string{`machine.time.servers: time servers are ignored while time sync is disabled`},
		},
		{
			name:  "kernel settings",
			patch: `machine: {sysctls: {"net.ipv4.ip_forward": "1", "bad key": "1"}, sysfs: {"": x}, kernel: {modules: [{name: ""}, {name: ../evil}]}}`,
			wantErrs: []string{
				`machine.sysctls["bad key"]: invalid key: key "bad key" has a space, newline or NUL`,
				`machine.sysfs[""]: invalid key: empty key`,
				`machine.kernel.modules[0].name: invalid kernel module name ""`,
				`machine.kernel.modules[1].name: invalid kernel module name "../evil"`,
			},
		},
		{
			name: "sysctl and sysfs keys as absolute paths",
			patch: `machine: {sysctls: {"/proc/sys/net/ipv4/ip_forward": "1", "/proc/sys/net/ipv4/conf/eth0.100/forwarding": "1", "/proc/sys/": "1"},
				sysfs: {"/sys/kernel/mm/transparent_hugepage/enabled": never}}`,
			wantErrs: []string{
				`machine.sysctls["/proc/sys/"]: keys are relative to /proc/sys, written with dots (such as net.ipv4.ip_forward)`,
				`machine.sysctls["/proc/sys/net/ipv4/conf/eth0.100/forwarding"]: keys are relative to /proc/sys, written with slashes when a part holds a dot (net/ipv4/conf/eth0.100/forwarding)`,
				`machine.sysctls["/proc/sys/net/ipv4/ip_forward"]: keys are relative to /proc/sys, written with dots (net.ipv4.ip_forward)`,
				`machine.sysfs["/sys/kernel/mm/transparent_hugepage/enabled"]: keys are relative to /sys, written with dots (kernel.mm.transparent_hugepage.enabled)`,
			},
		},
		{
			name:      "kernel modules in container mode",
			patch:     `machine: {kernel: {modules: [{name: br_netfilter}]}}`,
			mode:      "container",
			wantWarns: []string{`machine.kernel.modules: kernel modules cannot be loaded in container mode`},
		},
		{
			name:  "features",
			patch: `machine: {features: {kubePrism: {enabled: true, port: 70000}, nodeAddressSortAlgorithm: v3}}`,
			wantErrs: []string{
				`machine.features.kubePrism.port: invalid KubePrism port 70000: must be between 1 and 65535`,
				`machine.features.nodeAddressSortAlgorithm: unsupported algorithm "v3" (expected v1 or v2)`,
			},
		},
		{
			name:      "control-plane section on a worker",
			base:      "worker",
			patch:     `machine: {controlPlane: {scheduler: {disabled: true}}}`,
			wantWarns: []string{`machine.controlPlane: has no effect on worker nodes`},
		},
		{
			name:  "seccomp profiles and udev rules",
			patch: `machine: {seccompProfiles: [{name: a.json, value: {defaultAction: SCMP_ACT_LOG}}, {name: a.json}, {value: {x: 1}}], udev: {rules: [" "]}}`,
			wantErrs: []string{
				`machine.udev.rules[0]: udev rule is empty`,
				`machine.seccompProfiles[1].name: seccomp profile "a.json" is declared twice`,
				`machine.seccompProfiles[1].value: seccomp profile value is required`,
				`machine.seccompProfiles[2].name: seccomp profile name is required`,
			},
		},
		{
			name:     "accepted CAs",
			patch:    `machine: {acceptedCAs: [{crt: aGk=}, {}]}`,
			wantErrs: []string{`machine.acceptedCAs[0].crt: invalid certificate: expected a PEM CERTIFICATE block (base64 of -----BEGIN CERTIFICATE-----...)`, `machine.acceptedCAs[1].crt: certificate is required`},
		},
		{
			name:      "DHCP options without DHCP",
			patch:     `machine: {network: {interfaces: [{interface: eth0, addresses: [10.0.0.2/24], dhcpOptions: {routeMetric: 10}}]}}`,
			wantWarns: []string{`machine.network.interfaces[0].dhcpOptions: dhcpOptions have no effect without dhcp: true`},
		},
		{
			name: "control-plane components",
			patch: `cluster: {
				apiServer: {extraVolumes: [{hostPath: var/log, mountPath: /var/log}], admissionControl: [{configuration: {a: 1}}]},
				scheduler: {image: "registry.k8s.io/kube-scheduler:v1.34.1"}, controllerManager: {extraVolumes: [{hostPath: /a, mountPath: b}]},
				etcd: {advertisedSubnets: [10.0.0.0/33], listenSubnets: ["!fd00::/64", nope]},
				controlPlane: {endpoint: "https://cp.example.com:6443", localAPIServerPort: 70000}}`,
			wantErrs: []string{
				`cluster.controlPlane.localAPIServerPort: invalid local API server port 70000: must be between 1 and 65535`,
				`cluster.apiServer.extraVolumes[0].hostPath: host path "var/log" must be an absolute path`,
				`cluster.apiServer.admissionControl[0].name: admission plugin name is required`,
				`cluster.controllerManager.extraVolumes[0].mountPath: mount path "b" must be an absolute path`,
				`cluster.etcd.advertisedSubnets[0]: invalid subnet "10.0.0.0/33": a CIDR or an IP address, with an optional leading !`,
				`cluster.etcd.listenSubnets[1]: invalid subnet "nope": a CIDR or an IP address, with an optional leading !`,
			},
		},
		{
			name: "discovery and cloud provider",
			patch: `cluster: {discovery: {enabled: true, registries: {kubernetes: {disabled: true}, service: {disabled: true, endpoint: "discovery.talos.dev"}}},
				externalCloudProvider: {manifests: ["https://example.com/ccm.yaml"]}, extraManifestHeaders: {"Bad Header": x},
				inlineManifests: [{name: empty}]}`,
			wantErrs: []string{
				`cluster.discovery.registries.service.endpoint: invalid discovery service endpoint "discovery.talos.dev": has no scheme: want https:// or http://`,
				`cluster.extraManifestHeaders["Bad Header"]: invalid HTTP header name "Bad Header"`,
				`cluster.externalCloudProvider.manifests: external cloud provider is disabled, but manifests are provided (set enabled: true, or remove them)`,
			},
			wantWarns: []string{
				`cluster.discovery: discovery is enabled but every registry is disabled`,
				`cluster.inlineManifests[0].contents: inline manifest "empty" is empty`,
			},
		},
		{
			name:  "encryption secret required on control plane",
			patch: `cluster: {secretboxEncryptionSecret: null}`,
			wantErrs: []string{
				`cluster.secretboxEncryptionSecret: an encryption secret is required for controlplane nodes (.cluster.secretboxEncryptionSecret or .cluster.aescbcEncryptionSecret)`,
			},
		},
		{
			name:  "worker must not hold aggregator or service account keys",
			base:  "worker",
			patch: `cluster: {aggregatorCA: {key: ` + osKey + `}, serviceAccount: {key: ` + osKey + `}}`,
			wantErrs: []string{
				`cluster.aggregatorCA.key: aggregator CA key is not allowed on non-controlplane nodes (.cluster.aggregatorCA)`,
				`cluster.serviceAccount.key: service account key is not allowed on non-controlplane nodes (.cluster.serviceAccount)`,
				`cluster.serviceAccount.key: the service account key must be RSA or ECDSA (kube-apiserver cannot sign tokens with a ed25519.PrivateKey)`,
			},
		},
		{
			name:     "worker needs the kubernetes CA certificate",
			base:     "worker",
			patch:    `cluster: {ca: null}`,
			wantErrs: []string{`cluster.ca.crt: kubernetes CA certificate is required (.cluster.ca.crt)`},
		},
		{
			name:     "cluster name required",
			patch:    `cluster: {clusterName: null}`,
			wantErrs: []string{`cluster.clusterName: cluster name is required (.cluster.clusterName)`},
		},
		{
			// Talos 1.3 to 1.7 generated workers without one.
			name:  "worker without a cluster name",
			base:  "worker",
			patch: `cluster: {clusterName: null}`,
		},
		{
			name:     "cluster name blank",
			patch:    `cluster: {clusterName: "  "}`,
			wantErrs: []string{`cluster.clusterName: cluster name is required (.cluster.clusterName)`},
		},
		{
			name:     "endpoint IP:port without scheme",
			patch:    `cluster: {controlPlane: {endpoint: "10.5.0.2:6443"}}`,
			wantErrs: []string{`cluster.controlPlane.endpoint: "10.5.0.2:6443" has no scheme: want https://HOST:PORT`},
		},
		{
			name:     "endpoint host:port without scheme",
			patch:    `cluster: {controlPlane: {endpoint: "cp.example.com:6443"}}`,
			wantErrs: []string{`cluster.controlPlane.endpoint: "cp.example.com:6443" has no scheme: want https://HOST:PORT`},
		},
		{
			name:  "URLs without scheme",
			patch: `{machine: {logging: {destinations: [{endpoint: "10.0.0.1:514", format: json_lines}]}}, cluster: {extraManifests: ["10.0.0.1:8080/m.yaml"]}}`,
			wantErrs: []string{
				`machine.logging.destinations[0].endpoint: invalid log destination "10.0.0.1:514": has no scheme: want tcp:// or udp://`,
				`cluster.extraManifests[0]: invalid manifest URL "10.0.0.1:8080/m.yaml": has no scheme: want http:// or https://`,
			},
		},
		{
			name:     "private key that is not PEM",
			patch:    `cluster: {serviceAccount: {key: aGk=}}`,
			wantErrs: []string{`cluster.serviceAccount.key: invalid private key: expected a PEM PRIVATE KEY block (base64 of -----BEGIN ... PRIVATE KEY-----...)`},
		},
	})
}
