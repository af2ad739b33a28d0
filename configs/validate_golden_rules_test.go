package configs_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

// testPKI is generated once: two CAs (to mismatch a key with a
// certificate) and a leaf certificate (not a CA).
var testPKI = sync.OnceValue(func() (p struct{ ca1Crt, ca2Key, leafCrt string }) {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

	ca1, err := pki.NewCA(pki.CAOptions{Organization: "one", CommonName: "one"})
	if err != nil {
		panic(err)
	}

	ca2, err := pki.NewCA(pki.CAOptions{Organization: "two", CommonName: "two"})
	if err != nil {
		panic(err)
	}

	key, err := pki.ParsePrivateKeyPEM(ca2.Key)
	if err != nil {
		panic(err)
	}

	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		BasicConstraintsValid: true, IsCA: false,
	}

	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		panic(err)
	}

	p.ca1Crt, p.ca2Key = b64(ca1.Crt), b64(ca2.Key)
	p.leafCrt = b64(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))

	return p
})

// TestValidateRules covers the rules that used to live only in the code
// that acts on a value (and failed after the apply), Talos's own, and the
// Kubernetes components': each case is refused with its exact message.
func TestValidateRules(t *testing.T) {
	t.Parallel()

	p := testPKI()

	runValidateCases(t, []validateCase{
		{
			name: "etcd extraArgs",
			patch: `cluster: {etcd: {extraArgs: {data-dir: /x, listen-client-urls: "https://0.0.0.0:2379", snapshot-cont: "5",
				snapshot-count: lots, feature-gates: "Frobnicate=true", experimental-compact-hash-check-enabled: "true", election-timeout: "5000"}}}`,
			wantErrs: []string{
				`cluster.etcd.extraArgs["data-dir"]: "data-dir": managed by talosbox, not settable in extraArgs`,
				`cluster.etcd.extraArgs["feature-gates"]: feature-gates="Frobnicate=true": unknown feature gate "Frobnicate" (known: AllAlpha, AllBeta, CompactHashCheck, FastLeaseKeepAlive, InitialCorruptCheck, LeaseCheckpoint, LeaseCheckpointPersist, PriorityRequest, SetMemberLocalAddr, StopGRPCServiceOnDefrag, TxnModeWriteWithSharedBuffer)`,
				`cluster.etcd.extraArgs["listen-client-urls"]: "listen-client-urls": managed by talosbox, not settable in extraArgs`,
				`cluster.etcd.extraArgs["snapshot-cont"]: "snapshot-cont": not an etcd flag this member supports (did you mean "snapshot-count"?)`,
				`cluster.etcd.extraArgs["snapshot-count"]: snapshot-count="lots": want an unsigned integer`,
			},
		},
		{
			name:  "kubelet protected fields",
			patch: `machine: {kubelet: {extraConfig: {authentication: {anonymous: {enabled: true}}, staticPodPath: /srv, maxPods: 250}}}`,
			wantErrs: []string{
				`machine.kubelet.extraConfig.authentication: kubelet configuration field "authentication" can't be overridden: talosbox sets it`,
				`machine.kubelet.extraConfig.staticPodPath: kubelet configuration field "staticPodPath" can't be overridden: talosbox sets it`,
			},
		},
		{
			name:  "sysctl and sysfs keys",
			patch: `machine: {sysctls: {"net..ipv4": "1", "net/ipv4/../x": "1", "net.ipv4.ip_forward": "1"}, sysfs: {"devices.system.cpu.": "x"}}`,
			wantErrs: []string{
				`machine.sysctls["net..ipv4"]: invalid key: key "net..ipv4" has an empty part`,
				`machine.sysctls["net/ipv4/../x"]: invalid key: key "net/ipv4/../x" has a ".." part`,
				`machine.sysfs["devices.system.cpu."]: invalid key: key "devices.system.cpu." has an empty part`,
			},
		},
		{
			name:  "kernel arguments grub.cfg cannot carry",
			patch: `machine: {install: {extraKernelArgs: ["console=ttyS0", "a=\"b\"", "x\nlinux /evil", "root=$dev", ""]}}`,
			wantErrs: []string{
				`machine.install.extraKernelArgs[1]: a kernel argument cannot hold "\"": the boot loader's config (grub.cfg) could not carry it`,
				`machine.install.extraKernelArgs[2]: a kernel argument cannot hold "\n": the boot loader's config (grub.cfg) could not carry it`,
				`machine.install.extraKernelArgs[3]: a kernel argument cannot hold "$": the boot loader's config (grub.cfg) could not carry it`,
				`machine.install.extraKernelArgs[4]: kernel argument is empty`,
			},
		},
		{
			name: "user disks",
			patch: `machine: {disks: [
				{device: /dev/sda, partitions: [{mountpoint: /var/mnt/a}]},
				{device: /dev/sdb, partitions: [{mountpoint: /var/mnt/b}, {mountpoint: /var/mnt/c, size: 10GB}]},
				{device: /dev/sdb, partitions: [{mountpoint: /var/mnt/c, size: 100EB}]},
				{device: /dev/sdc, partitions: [{mountpoint: /, size: 1GB}, {mountpoint: /var/mnt//d}, {mountpoint: /var}]},
				{device: /dev/sdd}]}`,
			wantErrs: []string{
				`machine.disks[0].device: /dev/sda is the install disk (machine.install.disk): the system partitions live there; a user disk must be another disk`,
				`machine.disks[1].partitions[0].size: partition for disk "/dev/sdb" is set to occupy the rest of the disk, but it is not the last partition in the list`,
				`machine.disks[2].device: disk /dev/sdb is already configured by machine.disks[1]: give each disk one entry with all its partitions`,
				`machine.disks[2].partitions[0].mountpoint: /var/mnt/c is already the mountpoint of machine.disks[1].partitions[1].mountpoint`,
				`machine.disks[2].partitions[0].size: size "100EB" is larger than any disk (4.0 EiB)`,
				`machine.disks[3].partitions[0].mountpoint: a user disk cannot be mounted at /: it would hide the node's own file system (use a directory such as /var/mnt/data)`,
				`machine.disks[3].partitions[1].mountpoint: partition mountpoint "/var/mnt//d" is not a clean path (did you mean "/var/mnt/d"?)`,
				`machine.disks[3].partitions[1].size: partition for disk "/dev/sdc" is set to occupy the rest of the disk, but it is not the last partition in the list`,
				`machine.disks[3].partitions[2].mountpoint: a user disk cannot be mounted at /var: it would hide the node's own file system (use a directory such as /var/mnt/data)`,
				`machine.disks[4].partitions: at least one partition is required (mountpoint and size)`,
			},
		},
		{
			name:  "CA keys that do not match, and certificates that are not CAs",
			patch: `{machine: {ca: {crt: ` + p.ca1Crt + `, key: ` + p.ca2Key + `}, acceptedCAs: [{crt: ` + p.leafCrt + `}]}, cluster: {aggregatorCA: {crt: ` + p.leafCrt + `, key: ` + p.ca2Key + `}}}`,
			wantErrs: []string{
				`machine.ca.key: the private key does not belong to the certificate in .machine.ca.crt: the pair cannot sign anything (was one of them replaced without the other?)`,
				`machine.acceptedCAs[0].crt: invalid certificate: certificate is not a certificate authority (its basic constraints say CA:FALSE)`,
				`cluster.aggregatorCA.crt: invalid certificate: certificate is not a certificate authority (its basic constraints say CA:FALSE)`,
			},
		},
		{
			name: "inline manifests that are not objects",
			patch: `cluster: {inlineManifests: [
				{name: list, contents: "- a\n- b\n"},
				{name: noversion, contents: "kind: ConfigMap\nmetadata: {name: x}\n"},
				{name: noname, contents: "---\napiVersion: v1\nkind: ConfigMap\n"},
				{name: bad, contents: "a: [\n"},
				{name: good, contents: "# only a comment\n---\napiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}]\n"},
				{name: nan, contents: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\ndata: {x: .nan}\n"},
				{name: tagged, contents: "--- !ns\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: t}\n"}]}`,
			wantErrs: []string{
				`cluster.inlineManifests[0].contents: inline manifest "list": document 1 (line 1): a manifest document must be a Kubernetes object (a mapping with apiVersion and kind), got a sequence`,
				`cluster.inlineManifests[1].contents: inline manifest "noversion": document 1 (line 1): the object (kind "ConfigMap") has no apiVersion`,
				`cluster.inlineManifests[2].contents: inline manifest "noname": document 1 (line 2): v1 ConfigMap has no metadata.name: server-side apply needs one`,
				`cluster.inlineManifests[3].contents: inline manifest "bad": document 1: yaml: line 1: did not find expected node content`,
				`cluster.inlineManifests[5].contents: inline manifest "nan": document 1: json: unsupported value: NaN`,
				`cluster.inlineManifests[6].contents: inline manifest "tagged": document 1: invalid Yaml document separator: !ns`,
			},
		},
		{
			name: "labels, annotations and taints as Kubernetes checks them",
			patch: `machine: {nodeLabels: {"` + strings.Repeat("a", 64) + `": x, "Example.com/x": y, "ok": "` + strings.Repeat("v", 64) + `", "a/b/c": z},
				nodeAnnotations: {"talos.dev/owned-labels": "[]", "big": "` + strings.Repeat("x", 300<<10) + `"},
				nodeTaints: {"t1": "v:NoSchedule:x", "t2": "NoExecute", "t3": "bad value:NoSchedule"}}`,
			wantErrs: []string{
				`machine.nodeLabels["Example.com/x"]: invalid key "Example.com/x": the prefix "Example.com" must be a lowercase DNS subdomain (a-z, 0-9, '-' and '.')`,
				`machine.nodeLabels["a/b/c"]: invalid key "a/b/c": at most one / (prefix/name)`,
				`machine.nodeLabels["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]: invalid key "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": the name is 64 characters, the limit is 63`,
				`machine.nodeLabels["ok"]: invalid value "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv": 64 characters, the limit is 63`,
				`machine.nodeAnnotations["talos.dev/owned-labels"]: annotation "talos.dev/owned-labels" is reserved: talosbox keeps it to track what it owns on the node`,
				`machine.nodeAnnotations: the annotations total 307227 bytes, over the limit of 262144 bytes (256 KiB) the API server allows a node`,
				`machine.nodeTaints["t1"]: invalid taint "v:NoSchedule:x": the effect "NoSchedule:x" must be NoSchedule, PreferNoSchedule or NoExecute (write [value:]effect)`,
				`machine.nodeTaints["t3"]: invalid value "bad value": a label value must be empty or start and end with a letter or digit, with only letters, digits, '-', '_' and '.' between`,
			},
		},
		{
			name: "control plane resources",
			patch: `cluster: {apiServer: {resources: {requests: {cpu: lots, ephemeral-storage: 1Gi}, limits: {memory: 256Mi}}},
				controllerManager: {resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: 500m, memory: 2Gi}}},
				scheduler: {resources: {requests: {memory: -1Mi}}}}`,
			wantErrs: []string{
				`cluster.apiServer.resources.requests["cpu"]: invalid quantity "lots": want a number with an optional suffix such as 250m, 0.5, 512Mi or 2G`,
				`cluster.apiServer.resources.requests["ephemeral-storage"]: unsupported pod resource "ephemeral-storage": only cpu and memory can be set`,
				`cluster.apiServer.resources.limits["memory"]: the memory limit 256Mi is below the request (512Mi, talosbox's default): the kubelet would refuse the pod`,
				`cluster.controllerManager.resources.limits["cpu"]: the cpu limit 500m is below the request (1): the kubelet would refuse the pod`,
				`cluster.scheduler.resources.requests["memory"]: -1Mi must not be negative`,
			},
		},
		{
			name:     "duplicate extensions",
			patch:    `machine: {install: {extensions: [{image: "ghcr.io/siderolabs/gvisor:1"}, {image: "ghcr.io/siderolabs/gvisor:1"}]}}`,
			wantErrs: []string{`machine.install.extensions[1].image: duplicate system extension "ghcr.io/siderolabs/gvisor:1" (also machine.install.extensions[0])`},
		},
		{
			name:  "discovery and KubeSpan prerequisites",
			patch: `{machine: {network: {kubespan: {enabled: true, mtu: 1200}}}, cluster: {discovery: {enabled: false, registries: {service: {endpoint: "https://discovery.example.com/v1"}}}}}`,
			wantErrs: []string{
				`machine.network.kubespan.mtu: kubespan link MTU must be at least 1280 (the IPv6 minimum), got 1200`,
				`cluster.discovery.registries.service.endpoint: cluster discovery service path should be empty, got "/v1"`,
				`machine.network.kubespan.enabled: KubeSpan requires cluster discovery to be enabled (cluster.discovery.enabled: true): its peers come from discovery`,
			},
			wantWarns: []string{`machine.network.kubespan.enabled: has no effect: talosbox does not implement KubeSpan yet (a WireGuard link of machine.network.interfaces[].wireguard does what it would)`},
		},
		{
			name:     "discovery needs the cluster identity",
			patch:    `cluster: {discovery: {enabled: true}}`,
			wantErrs: []string{`cluster.id: cluster discovery service requires .cluster.id (or a DiscoveryIdentityConfig document)`, `cluster.secret: cluster discovery service requires .cluster.secret (or a DiscoveryIdentityConfig document)`},
		},
		{
			name: "messages that say what would be right",
			patch: `{machine: {network: {hostname: "` + strings.Repeat("h", 64) + `.example.com"}, registries: {mirrors: {docker.io: {endpoints: ["http://fd00::1:5000"]}}},
				kubelet: {image: "ghcr.io/SideroLabs/Kubelet:v1.34.12"}},
				cluster: {controlPlane: {endpoint: "https://fd00::10:6443"}, coreDNS: {image: "https://registry.k8s.io/coredns/coredns:v1.12.4"}}}`,
			wantErrs: []string{
				`machine.kubelet.image: invalid image reference "ghcr.io/SideroLabs/Kubelet:v1.34.12": image paths are lowercase (did you mean "ghcr.io/siderolabs/kubelet:v1.34.12"?)`,
				`machine.network.hostname: invalid hostname "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh.example.com": its label "hhhhhhhhhhhhhhhhhhhh..." is 64 characters long, the limit is 63`,
				`machine.registries.mirrors["docker.io"].endpoints[0]: invalid mirror endpoint "http://fd00::1:5000": an IPv6 address in a URL goes in brackets: http://[fd00::1]:5000`,
				`cluster.controlPlane.endpoint: invalid controlplane endpoint "https://fd00::10:6443": an IPv6 address in a URL goes in brackets: https://[fd00::10]:6443`,
				`cluster.coreDNS.image: invalid image reference "https://registry.k8s.io/coredns/coredns:v1.12.4": an image is named without a scheme (registry/path:tag)`,
			},
		},
		{
			name: "pods the kubelet would refuse",
			patch: `{machine: {pods: [{apiVersion: v1, kind: Pod, metadata: {name: Web}, spec: {containers: [{name: a, image: b}]}},
					{apiVersion: v1, kind: Pod, spec: {containers: [{name: a, image: b}]}},
					{apiVersion: v1, kind: Pod, metadata: {name: web}},
					{apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: []}}],
				seccompProfiles: [{name: ../../etc/x.json, value: {defaultAction: SCMP_ACT_LOG}}],
				kubelet: {extraArgs: {node-labels: "node-role.kubernetes.io/worker=,node.kubernetes.io/pool=a,bad key=x"}},
				features: {kubernetesTalosAPIAccess: {enabled: true, allowedRoles: ["os:reader"], allowedKubernetesNamespaces: [kube-system, Kube_System]}}},
			cluster: {apiServer: {env: {"1X": y}, admissionControl: [{name: PodSecurity}, {name: PodSecurity}],
				extraVolumes: [{hostPath: /var/lib/a, mountPath: /data}, {hostPath: /var/lib/b, mountPath: /data/}, {hostPath: /var/lib/c, mountPath: /system/secrets/kubernetes}]}}}`,
			wantErrs: []string{
				`machine.kubelet.extraArgs["node-labels"]: the kubelet refuses to set label node-role.kubernetes.io/worker on its node (kubernetes.io and k8s.io labels are limited to its own set): set it in machine.nodeLabels instead`,
				`machine.kubelet.extraArgs["node-labels"]: invalid key "bad key": the name must start and end with a letter or digit, with only letters, digits, '-', '_' and '.' between`,
				`machine.pods[0].metadata.name: invalid pod name "Web": a lowercase DNS name (a-z, 0-9, '-' and '.')`,
				`machine.pods[1].metadata.name: a static pod needs a name: the kubelet drops a pod without one`,
				`machine.pods[2].spec: a pod needs a spec with its containers`,
				`machine.pods[3].metadata.name: pod "web" is already machine.pods[2]`,
				`machine.pods[3].spec.containers: a pod needs at least one container`,
				`machine.features.kubernetesTalosAPIAccess.allowedKubernetesNamespaces[1]: invalid namespace "Kube_System": a lowercase DNS label (a-z, 0-9 and '-', at most 63)`,
				`machine.seccompProfiles[0].name: seccomp profile name "../../etc/x.json" must be a file name (it is written to the kubelet's seccomp directory)`,
				`cluster.apiServer.extraVolumes[1].mountPath: /data is already mounted by cluster.apiServer.extraVolumes[0]: a pod cannot mount two volumes at one path`,
				`cluster.apiServer.extraVolumes[2].mountPath: /system/secrets/kubernetes is where talosbox mounts the component's own secrets, configs or audit log`,
				`cluster.apiServer.env["1X"]: invalid environment variable name "1X": letters, digits, '_', '-' and '.', not starting with a digit`,
				`cluster.apiServer.admissionControl[1].name: admission plugin "PodSecurity" is configured twice (also admissionControl[0]): kube-apiserver refuses that`,
			},
		},
		{
			name: "registries, log destinations and module parameters",
			patch: `machine: {registries: {mirrors: {"https://docker.io": {endpoints: ["https://mirror.example.com/v2/"]}, "ghcr.io": {endpoints: ["https://m.example.com/v2"], overridePath: true}},
					config: {"registry.example.com:99999": {auth: {username: a, password: b}}}},
				logging: {destinations: [{endpoint: "tcp://logs.example.com", format: json_lines}, {endpoint: "tcp://:5000", format: json_lines}]},
				kernel: {modules: [{name: br_netfilter, parameters: ["=1"]}, {name: dummy, parameters: ["numdummies=1", "x=\"a\"b\""]}]}}`,
			wantErrs: []string{
				`machine.registries.mirrors["https://docker.io"]: registry host "https://docker.io" must be a host name with an optional port, as image references name it (did you mean "docker.io"?)`,
				`machine.registries.config["registry.example.com:99999"]: registry host "registry.example.com:99999": invalid port "99999"`,
				`machine.logging.destinations[0].endpoint: log destination "tcp://logs.example.com" has no port: the node would not know where to send (tcp://host:port)`,
				`machine.logging.destinations[1].endpoint: invalid log destination "tcp://:5000": host is missing`,
				`machine.kernel.modules[0].parameters: parameter "=1": invalid name ""`,
				`machine.kernel.modules[1].parameters: parameter "x=\"a\"b\"": the kernel cannot take a double quote inside a value`,
			},
			wantWarns: []string{`machine.registries.mirrors["https://docker.io"].endpoints[0]: https://mirror.example.com/v2/ ends with /v2, which containerd adds itself (it would ask for /v2/v2/...): leave it out, or set overridePath: true if the mirror serves the API there`},
		},
		{
			// Talos accepts both; the node renders cluster.local.
			name:  "DNS domain with a trailing dot, in capitals",
			patch: `cluster: {network: {dnsDomain: Cluster.Local.}}`,
		},
		{
			name:     "DNS domain that is only a dot",
			patch:    `cluster: {network: {dnsDomain: .}}`,
			wantErrs: []string{`cluster.network.dnsDomain: invalid DNS domain ".": it is empty`},
		},
		{
			name: "what the renderers and the etcd member would refuse, said by validation",
			patch: `{machine: {registries: {config: {"*": {tls: {insecureSkipVerify: true}}}}},
				cluster: {etcd: {extraArgs: {heartbeat-interval: "500", listen-metrics-urls: "http://metrics.example:2381"}}}}`,
			wantErrs: []string{
				`machine.registries.config["*"].tls: TLS settings for the wildcard host "*" are not supported: give them for each registry's host`,
				`cluster.etcd.extraArgs: --election-timeout[1000ms] should be at least as 5 times as --heartbeat-interval[500ms]: etcd would not start`,
				`cluster.etcd.extraArgs: expected IP in URL for binding (http://metrics.example:2381): etcd would not start`,
			},
		},
		{
			name: "kubelet taints, flannel flags, audit resources and verbosity",
			patch: `{machine: {kubelet: {extraArgs: {register-with-taints: "a=b:Bad,c:NoSchedule,nokey", v: ten}}},
				cluster: {network: {cni: {name: flannel, flannel: {extraArgs: ["--iface", "eth1"]}}},
					apiServer: {auditPolicy: {apiVersion: audit.k8s.io/v1, kind: Policy, rules: [{level: Metadata, resources: [{group: "", resource: [pods]}]}]}}}}`,
			wantErrs: []string{
				`machine.kubelet.extraArgs["register-with-taints"]: taint "a=b:Bad": the effect "Bad" must be NoSchedule, PreferNoSchedule or NoExecute`,
				`machine.kubelet.extraArgs["register-with-taints"]: taint "nokey" has no effect: write key[=value]:effect`,
				`cluster.network.cni.flannel.extraArgs[1]: "eth1" is not a flag: write each as --name=value (flanneld stops reading flags at the first word that is not one)`,
				`machine.kubelet.extraArgs["v"]: invalid value "ten" for --v (Level): want an integer`,
				`cluster.apiServer.auditPolicy.rules[0].resources[0].resource: unknown field "resource" (did you mean "resources"?)`,
			},
		},
		{
			name:  "hostDNS options need hostDNS",
			patch: `machine: {features: {hostDNS: {enabled: false, forwardKubeDNSToHost: true, resolveMemberNames: true}}}`,
			wantErrs: []string{
				`machine.features.hostDNS.forwardKubeDNSToHost: feature hostDNS.forwardKubeDNSToHost requires hostDNS.enabled to be true (.machine.features.hostDNS)`,
				`machine.features.hostDNS.resolveMemberNames: feature hostDNS.resolveMemberNames requires hostDNS.enabled to be true (.machine.features.hostDNS)`,
			},
		},
	})
}
