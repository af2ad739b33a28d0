package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// osKey is a PEM private key (base64) for cases that put a key where it is
// not allowed.
const osKey = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1DNENBUUF3QlFZREsyVndCQ0lFSUVZTjBxQk5Kd1E1S3g3ZG9yN3dhbWZ0eU9uK1E4RlUrZ1lBUkYzNjdUYkQKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo="

// TestValidateGolden covers machine-wide and cluster rules.
func TestValidateGolden(t *testing.T) {
	t.Parallel()

	runValidateCases(t, []validateCase{
		{
			name:     "unknown machine type",
			base:     "worker",
			patch:    `machine: {type: x}`,
			wantErrs: []string{`machine.type: unknown machine type "x"`},
		},
		{
			name:     "missing machine type",
			base:     "worker",
			patch:    `machine: {type: null}`,
			wantErrs: []string{`machine.type: unknown machine type ""`},
		},
		{
			name:      "init is deprecated",
			patch:     `machine: {type: init}`,
			wantWarns: []string{`machine.type: machine type "init" is deprecated: use "controlplane" and run talosctl bootstrap once`},
		},
		{
			// Talos reads "join" as worker, with this warning.
			name:      "join is worker",
			base:      "worker",
			patch:     `machine: {type: join}`,
			wantWarns: []string{`machine.type: use "worker" instead of "join" for machine type`},
		},
		{
			name:  "join is held to the worker rules",
			base:  "worker",
			patch: `machine: {type: join, ca: {key: ` + osKey + `}}`,
			wantErrs: []string{
				`machine.ca.key: issuing Talos API CA key is not allowed on non-controlplane nodes (.machine.ca)`,
				`machine.ca.key: the private key does not belong to the certificate in .machine.ca.crt: the pair cannot sign anything (was one of them replaced without the other?)`,
			},
			wantWarns: []string{`machine.type: use "worker" instead of "join" for machine type`},
		},
		{
			name:     "init is deprecated, strict",
			patch:    `machine: {type: init}`,
			strict:   true,
			wantErrs: []string{`warning: machine.type: machine type "init" is deprecated: use "controlplane" and run talosctl bootstrap once`},
		},
		{
			name:     "endpoint required",
			patch:    `cluster: {controlPlane: null}`,
			wantErrs: []string{`cluster.controlPlane.endpoint: cluster controlplane endpoint is required`},
		},
		{
			name:     "endpoint not https",
			patch:    `cluster: {controlPlane: {endpoint: "http://cp.example.com:6443"}}`,
			wantErrs: []string{`cluster.controlPlane.endpoint: invalid controlplane endpoint: scheme must be https, got "http"`},
		},
		{
			name:     "endpoint port out of range",
			patch:    `cluster: {controlPlane: {endpoint: "https://cp.example.com:99999"}}`,
			wantErrs: []string{`cluster.controlPlane.endpoint: invalid controlplane endpoint: invalid port "99999"`},
		},
		{
			name:     "endpoint unparsable",
			patch:    `cluster: {controlPlane: {endpoint: "https://cp example:6443"}}`,
			wantErrs: []string{`cluster.controlPlane.endpoint: invalid controlplane endpoint: invalid character " " in host name`},
		},
		{
			name:     "endpoint without scheme",
			patch:    `cluster: {controlPlane: {endpoint: "cp.example.com"}}`,
			wantErrs: []string{`cluster.controlPlane.endpoint: "cp.example.com" has no scheme: want https://HOST:PORT`},
		},
		{
			name:     "controlplane needs the CA key",
			patch:    `machine: {ca: {key: null}}`,
			wantErrs: []string{`machine.ca.key: issuing CA key is required for controlplane nodes (.machine.ca.key)`},
		},
		{
			name:  "worker must not hold the CA key",
			base:  "worker",
			patch: `machine: {ca: {key: ` + osKey + `}}`,
			wantErrs: []string{
				`machine.ca.key: issuing Talos API CA key is not allowed on non-controlplane nodes (.machine.ca)`,
				`machine.ca.key: the private key does not belong to the certificate in .machine.ca.crt: the pair cannot sign anything (was one of them replaced without the other?)`,
			},
		},
		{
			name:     "worker needs a trusted CA",
			base:     "worker",
			patch:    `machine: {ca: null}`,
			wantErrs: []string{`machine.ca.crt: trusted CA certificates are required on non-controlplane nodes (.machine.ca.crt, .machine.acceptedCAs)`},
		},
		{
			name:  "worker must not hold the kubernetes CA key",
			base:  "worker",
			patch: `cluster: {ca: {key: ` + osKey + `}}`,
			wantErrs: []string{
				`cluster.ca.key: cluster CA key is not allowed on non-controlplane nodes (.cluster.ca)`,
				`cluster.ca.key: the private key does not belong to the certificate in .cluster.ca.crt: the pair cannot sign anything (was one of them replaced without the other?)`,
			},
		},
		{
			name:     "worker must not have etcd",
			base:     "worker",
			patch:    `cluster: {etcd: {image: "gcr.io/etcd-development/etcd:v3.6.5"}}`,
			wantErrs: []string{`cluster.etcd: etcd config is only allowed on control plane machines`},
		},
		{
			name:  "controlplane needs every cluster CA",
			patch: `cluster: {aggregatorCA: null, serviceAccount: null, etcd: null}`,
			wantErrs: []string{
				`cluster.aggregatorCA.crt: aggregator CA certificate is required for controlplane nodes (.cluster.aggregatorCA.crt)`,
				`cluster.aggregatorCA.key: aggregator CA key is required for controlplane nodes (.cluster.aggregatorCA.key)`,
				`cluster.serviceAccount.key: service account key is required for controlplane nodes (.cluster.serviceAccount.key)`,
				`cluster.etcd.ca.crt: etcd CA certificate is required for controlplane nodes (.cluster.etcd.ca.crt)`,
				`cluster.etcd.ca.key: etcd CA key is required for controlplane nodes (.cluster.etcd.ca.key)`,
			},
		},
		{
			name:     "certificate is not PEM",
			patch:    `machine: {ca: {crt: aGVsbG8=}}`,
			wantErrs: []string{`machine.ca.crt: invalid certificate: expected a PEM CERTIFICATE block (base64 of -----BEGIN CERTIFICATE-----...)`},
		},
		{
			name: "encryption key slots and kinds",
			patch: `machine: {systemDiskEncryption: {ephemeral: {keys: [
				{static: {passphrase: a}, slot: 0},
				{nodeID: {}, slot: 0},
				{static: {passphrase: b}, nodeID: {}, slot: 2},
				{slot: 3},
				{tpm: {}, slot: 32},
				{static: {}, slot: 4}]}}}`,
			wantErrs: []string{
				`machine.systemDiskEncryption.ephemeral.keys[1].slot: encryption key slot 0 is already in use`,
				`machine.systemDiskEncryption.ephemeral.keys[2]: encryption key at slot 2 has more than one kind (static, nodeID): exactly one of static, nodeID, kms or tpm is allowed`,
				`machine.systemDiskEncryption.ephemeral.keys[3]: encryption key at slot 3 doesn't have any settings (expected one of static, nodeID, kms or tpm)`,
				`machine.systemDiskEncryption.ephemeral.keys[4].slot: encryption key slot 32 is out of range (0-31)`,
				`machine.systemDiskEncryption.ephemeral.keys[5].static.passphrase: static key passphrase is required`,
			},
		},
		{
			name:  "encryption settings",
			patch: `machine: {systemDiskEncryption: {state: {provider: luks1, cipher: rot13, keySize: 128, blockSize: 1000, options: [no_read_workqueue, turbo], keys: [{kms: {endpoint: "kms.local"}, slot: 0}]}, ephemeral: {}}}`,
			wantErrs: []string{
				`machine.systemDiskEncryption.state.provider: unsupported encryption provider "luks1" (expected luks2)`,
				`machine.systemDiskEncryption.state.cipher: unsupported cipher "rot13" (expected one of aes-xts-plain64, xchacha12,aes-adiantum-plain64, xchacha20,aes-adiantum-plain64)`,
				`machine.systemDiskEncryption.state.keySize: unsupported key size 128 (expected 256 or 512 bits)`,
				`machine.systemDiskEncryption.state.blockSize: unsupported block size 1000 (expected a power of two from 512 to 4096)`,
				`machine.systemDiskEncryption.state.options[1]: unsupported option "turbo" (expected one of no_read_workqueue, no_write_workqueue, same_cpu_crypt, submit_from_crypt_cpus, allow_discards)`,
				`machine.systemDiskEncryption.state.keys[0].kms.endpoint: invalid KMS endpoint "kms.local": has no scheme: want https:// or http:// or grpc://`,
				`machine.systemDiskEncryption.ephemeral.keys: at least one encryption key is required`,
			},
		},
		{
			name:      "static key on STATE warns",
			patch:     `machine: {systemDiskEncryption: {state: {keys: [{static: {passphrase: x}, slot: 0}]}}}`,
			wantWarns: []string{`machine.systemDiskEncryption.state.keys[0].static: a static key for the STATE partition is stored unencrypted in META; use nodeID, kms or tpm`},
		},
		{
			name:      "encryption in container mode warns",
			patch:     `machine: {systemDiskEncryption: {ephemeral: {keys: [{nodeID: {}, slot: 0}]}}}`,
			mode:      configs.ModeContainer,
			wantWarns: []string{`machine.systemDiskEncryption: system disk encryption is ignored in container mode`},
		},
		{
			name: "files",
			patch: `machine: {files: [
				{path: /var/motd, op: prepend, content: hi},
				{path: var/motd, op: create, content: hi},
				{path: /var/a, op: create, permissions: 0o17777},
				{path: /etc/motd, op: overwrite},
				{path: /var/lib/../../etc/shadow, op: append},
				{path: /var/lib/, op: create},
				{path: /var/a, op: create},
				{path: /var/a, op: append},
				{path: /var/a/b, op: create},
				{path: /usr/local/bin/x, op: create}]}`,
			wantErrs: []string{
				`machine.files[0].op: unsupported file op "prepend" (expected create, append or overwrite)`,
				`machine.files[1].path: path "var/motd" is not absolute`,
				`machine.files[2].permissions: invalid file permissions 0o17777: only the bits 0o7777 may be set`,
				`machine.files[3].path: path "/etc/motd" is not writable: files may only be written under /var/, /etc/cri/conf.d/hosts/ or to /etc/cri/conf.d/20-customization.part, /etc/ssl/certs/ca-certificates`,
				`machine.files[4].path: path "/var/lib/../../etc/shadow" must not contain ".."`,
				`machine.files[5].path: path "/var/lib/" names a directory, not a file`,
				`machine.files[6].path: /var/a is already written by machine.files[2] (op create): give each file one create or overwrite, then appends`,
				`machine.files[8].path: /var/a/b needs /var/a to be a directory, but machine.files[2] writes it as a file`,
				`machine.files[9].path: path "/usr/local/bin/x" is not writable: files may only be written under /var/, /etc/cri/conf.d/hosts/ or to /etc/cri/conf.d/20-customization.part, /etc/ssl/certs/ca-certificates`,
			},
		},
		{
			name: "CRI parts must be TOML",
			patch: `machine: {files: [
				{path: /etc/cri/conf.d/20-customization.part, op: create, content: "[plugins]\nx =\n"},
				{path: /etc/cri/conf.d/20-customization.part, op: append, content: "[plugins\n"},
				{path: /etc/cri/conf.d/hosts/r.local/hosts.toml, op: create, content: "not = toml = here"}]}`,
			wantErrs: []string{
				`machine.files[0].content: /etc/cri/conf.d/20-customization.part: line 2: unexpected character U+000A at start of value`,
				`machine.files[1].content: /etc/cri/conf.d/20-customization.part: line 1: expected ']' to close table name`,
			},
		},
		{
			name: "old CRI drop-in directory",
			patch: `machine: {files: [
				{path: /var/cri/conf.d/metrics.toml, op: create, content: "[metrics]\naddress = '0.0.0.0:11234'\n"},
				{path: /var/cri/conf.d, op: create, content: ""},
				{path: /var/cri/conf.d.bak/x, op: create, content: ""}]}`,
			wantErrs: []string{
				`machine.files[0].path: /var/cri/conf.d is no longer read: put CRI customisations in /etc/cri/conf.d/20-customization.part (op: create)`,
				`machine.files[1].path: /var/cri/conf.d is a directory of machine.files[0] (/var/cri/conf.d/metrics.toml): it cannot also be a file`,
				`machine.files[1].path: /var/cri/conf.d is no longer read: put CRI customisations in /etc/cri/conf.d/20-customization.part (op: create)`,
			},
		},
		{
			name:      "file permissions written in decimal",
			patch:     `machine: {files: [{path: /var/etc/motd, op: create, permissions: 644}]}`,
			wantWarns: []string{`machine.files[0].permissions: file permissions 0o1204 set setuid, setgid or sticky bits; write octal modes with a leading 0 (0644)`},
		},
		{
			name: "registry mirrors",
			patch: `machine: {registries: {mirrors: {
				docker.io: {endpoints: [mirror.example.com, "http://10.5.0.1:5000", "ftp://x"]},
				quay.io: {}}}}`,
			wantErrs: []string{
				`machine.registries.mirrors["docker.io"].endpoints[0]: invalid mirror endpoint "mirror.example.com": has no scheme: want http:// or https://`,
				`machine.registries.mirrors["docker.io"].endpoints[2]: invalid mirror endpoint "ftp://x": scheme must be http or https`,
				`machine.registries.mirrors["quay.io"].endpoints: at least one mirror endpoint is required`,
			},
		},
		{
			name:  "registry config",
			patch: `machine: {registries: {config: {r.example.com: {tls: {ca: aGk=, clientIdentity: {crt: aGk=}}, auth: {password: x}}}}}`,
			wantErrs: []string{
				`machine.registries.config["r.example.com"].tls.ca: invalid certificate: expected a PEM CERTIFICATE block (base64 of -----BEGIN CERTIFICATE-----...)`,
				`machine.registries.config["r.example.com"].tls.clientIdentity.crt: invalid certificate: expected a PEM CERTIFICATE block (base64 of -----BEGIN CERTIFICATE-----...)`,
				`machine.registries.config["r.example.com"].tls.clientIdentity.key: client identity key is required`,
				`machine.registries.config["r.example.com"].auth.username: username is required with a password`,
			},
		},
		{
			name:     "metal mode needs install",
			patch:    `machine: {install: null}`,
			wantErrs: []string{`machine.install: install instructions are required in "metal" mode`},
		},
		{
			name:  "container mode does not need install",
			patch: `machine: {install: null}`,
			mode:  configs.ModeContainer,
		},
		{
			name:     "install disk or selector",
			patch:    `machine: {install: {disk: null, image: "ghcr.io/talosbox/installer:latest"}}`,
			wantErrs: []string{`machine.install: either install disk or diskSelector should be defined`},
		},
		{
			name:     "install disk or selector in cloud mode",
			patch:    `machine: {install: {disk: null, image: "ghcr.io/talosbox/installer:latest"}}`,
			mode:     configs.ModeCloud,
			wantErrs: nil,
		},
		{
			name:  "install disk selector comparisons",
			patch: `machine: {install: {disk: null, diskSelector: {size: "<> 10GB"}}}`,
			wantErrs: []string{
				`machine.install.diskSelector.size: invalid disk size "<> 10GB": unknown comparison "<>": want a size with an optional comparison (>=, <=, ==, > or <), such as ">= 100GB"`,
			},
		},
		{
			name:  "install disk selector comparisons, bad too",
			patch: `machine: {install: {disk: null, diskSelector: {size: "=> 10GB"}}}`,
			wantErrs: []string{
				`machine.install.diskSelector.size: invalid disk size "=> 10GB": unknown comparison "=>": want a size with an optional comparison (>=, <=, ==, > or <), such as ">= 100GB"`,
			},
		},
		{
			name:  "install disk selector comparisons that are fine",
			patch: `machine: {install: {disk: null, diskSelector: {size: "<= 2TB"}}}`,
		},
		{
			name:  "install disk without a device",
			patch: `machine: {install: {disk: /dev/}, disks: [{device: /dev, partitions: [{mountpoint: /var/mnt/a}]}]}`,
			wantErrs: []string{
				`machine.disks[0].device: disk device "/dev" must be a path under /dev/`,
				`machine.install.disk: install disk "/dev/" names no device: write the disk's path, such as /dev/sda`,
			},
		},
		{
			name:  "user disk without a device",
			patch: `machine: {disks: [{device: /dev//, partitions: [{mountpoint: /var/mnt/a}]}]}`,
			wantErrs: []string{
				`machine.disks[0].device: disk device "/dev//" names no device: write the disk's path, such as /dev/sdb`,
			},
		},
		{
			name:  "install settings",
			patch: `machine: {install: {disk: sda, diskSelector: {size: ">= lots", type: floppy}, image: "Ghcr.io/x y"}}`,
			wantErrs: []string{
				`machine.install.disk: install disk "sda" must be a path under /dev/`,
				`machine.install.diskSelector.size: invalid disk size ">= lots": want a size with an optional comparison (>=, <=, ==, > or <), such as ">= 100GB"`,
				`machine.install.diskSelector.type: unsupported disk type "floppy" (expected ssd, hdd, nvme or sd)`,
				`machine.install.image: invalid image reference "Ghcr.io/x y": it contains whitespace`,
			},
			wantWarns: []string{`machine.install: both disk and diskSelector are set; diskSelector wins`},
		},
		{
			name:  "tokens",
			patch: `{machine: {token: "ABCDEF.0123456789abcdef"}, cluster: {token: "abcdef0123456789abcdef"}}`,
			wantErrs: []string{
				`machine.token: trustd token is invalid (expected [a-z0-9]{6}.[a-z0-9]{16})`,
				`cluster.token: invalid bootstrap token (expected [a-z0-9]{6}.[a-z0-9]{16})`,
			},
		},
		{
			name:  "tokens required",
			patch: `{machine: {token: null}, cluster: {token: null}}`,
			wantErrs: []string{
				`machine.token: trustd token is required (.machine.token)`,
				`cluster.token: cluster bootstrap token is required (.cluster.token)`,
			},
		},
		{
			name:  "cluster network",
			patch: `cluster: {network: {cni: {name: calico}, dnsDomain: "cluster local", podSubnets: [10.244.0.0/33], serviceSubnets: [10.96.0.0/12, 10.100.0.0/16]}}`,
			wantErrs: []string{
				`cluster.network.cni.name: unsupported CNI driver "calico" (expected flannel, custom or none)`,
				`cluster.network.dnsDomain: invalid DNS domain "cluster local": its label "cluster local" may only hold letters, digits and '-', and must not start or end with '-'`,
				`cluster.network.podSubnets[0]: invalid CIDR "10.244.0.0/33"`,
				`cluster.network.serviceSubnets: at most one IPv4 and one IPv6 subnet are allowed`,
			},
		},
		{
			// Talos warns too: the CNI may be installed by hand later.
			name:  "custom CNI without URLs",
			patch: `cluster: {network: {cni: {name: custom}}, extraManifests: ["example.com/x.yaml"]}`,
			wantErrs: []string{
				`cluster.extraManifests[0]: invalid manifest URL "example.com/x.yaml": has no scheme: want http:// or https://`,
			},
			wantWarns: []string{`cluster.network.cni.urls: no manifest URLs for the custom CNI: install it yourself, or pods will not get networking`},
		},
		{
			name:  "flannel options with another CNI",
			patch: `cluster: {network: {cni: {name: none, urls: ["https://x/cni.yaml"], flannel: {extraArgs: [--iface=eth1]}}}}`,
			wantErrs: []string{
				`cluster.network.cni.urls: manifest URLs are only allowed for the custom CNI, not "none"`,
				`cluster.network.cni.flannel.extraArgs: flannel options apply only to the flannel CNI, not "none"`,
			},
		},
		{
			name:  "secrets are base64 of the right size",
			patch: `cluster: {id: "short", secret: "c2hvcnQ=", secretboxEncryptionSecret: "c2hvcnQ=", aescbcEncryptionSecret: "!!"}`,
			wantErrs: []string{
				`cluster.secret: invalid cluster secret: must be base64 of 16, 24, 32 bytes`,
				`cluster.secretboxEncryptionSecret: invalid secretbox encryption secret: must be base64 of 32 bytes`,
				`cluster.aescbcEncryptionSecret: invalid aescbc encryption secret: must be base64 of 16, 24, 32 bytes`,
			},
			// Talos does not check the ID at all: the discovery service
			// keys the cluster by it as a string.
			wantWarns: []string{`cluster.id: invalid cluster id: must be base64 of 32 bytes (std or URL-safe alphabet), as talosctl gen config makes it`},
		},
		{
			// Talos before 1.14 wrote cluster.id in the URL-safe alphabet.
			name:  "cluster id and secret in the URL-safe alphabet, padded or not",
			patch: `cluster: {id: "-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-__v8=", secret: "yMnKy8zNzs_Q0dLT1NXW19jZ2tvc3d7f4OHi4-Tl5uc"}`,
		},
		{
			name:  "cluster id and secret in the standard alphabet, unpadded",
			patch: `cluster: {id: "+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+//v8", secret: "yMnKy8zNzs/Q0dLT1NXW19jZ2tvc3d7f4OHi4+Tl5uc="}`,
		},
		{
			name:     "persist should be enabled",
			patch:    `persist: false`,
			wantErrs: []string{`persist: .persist should be enabled: a node that does not persist its config loses it at the next reboot`},
		},
		{
			name:  "version and sections",
			patch: `{version: v1alpha2, machine: null, cluster: null}`,
			wantErrs: []string{
				`version: invalid config version "v1alpha2" (expected "v1alpha1")`,
				`machine: machine instructions are required`,
				`cluster: cluster instructions are required`,
			},
		},
		{
			name:     "durations must not be negative",
			patch:    `{machine: {time: {bootTimeout: -1m}}, cluster: {adminKubeconfig: {certLifetime: -1h}}}`,
			wantErrs: []string{`machine.time.bootTimeout: must not be negative`, `cluster.adminKubeconfig.certLifetime: must not be negative`},
		},
		{
			name:  "components",
			patch: `cluster: {apiServer: {image: "registry.k8s.io/kube-apiserver:v1.34.1 ", certSANs: ["bad san"], disablePodSecurityPolicy: true}, proxy: {mode: userspace}, inlineManifests: [{name: a, contents: "kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\n"}, {name: a, contents: "{apiVersion: v1, kind: ConfigMap, metadata: {name: b}}"}, {contents: "[z]"}, {name: "  ", contents: "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}"}]}`,
			wantErrs: []string{
				`cluster.apiServer.image: invalid image reference "registry.k8s.io/kube-apiserver:v1.34.1 ": it contains whitespace`,
				`cluster.apiServer.certSANs[0]: invalid certificate SAN "bad san": must be an IP address or a DNS name`,
				`cluster.proxy.mode: unsupported kube-proxy mode "userspace" (expected iptables, ipvs or nftables)`,
				`cluster.inlineManifests[1].name: inline manifest name "a" is duplicate`,
				`cluster.inlineManifests[2].name: inline manifest name can't be empty`,
				`cluster.inlineManifests[3].name: inline manifest name can't be empty`,
				`cluster.inlineManifests[2].contents: inline manifest "": document 1 (line 1): a manifest document must be a Kubernetes object (a mapping with apiVersion and kind), got a sequence`,
			},
			wantWarns: []string{`cluster.apiServer.disablePodSecurityPolicy: has no effect: PodSecurityPolicy was removed in Kubernetes 1.25`},
		},
		{
			name:  "Talos API access from Kubernetes",
			base:  "worker",
			patch: `machine: {features: {kubernetesTalosAPIAccess: {enabled: true, allowedRoles: ["os:root"]}}}`,
			wantErrs: []string{
				`machine.features.kubernetesTalosAPIAccess: feature API access from Kubernetes is only allowed on controlplane nodes`,
				`machine.features.kubernetesTalosAPIAccess.allowedRoles[0]: invalid role "os:root" (expected one of os:admin, os:operator, os:reader, os:etcd:backup)`,
			},
		},
		{
			name:  "machine misc",
			patch: `machine: {env: {"1BAD": x}, logging: {destinations: [{endpoint: "http://x:1", format: text}]}, nodeTaints: {dedicated: "infra:Sometimes"}, nodeLabels: {"bad key!": x}, pods: [{kind: Deployment}]}`,
			wantErrs: []string{
				`machine.pods[0]: static pod must have apiVersion "v1" and kind "Pod"`,
				`machine.env["1BAD"]: invalid environment variable name "1BAD"`,
				`machine.logging.destinations[0].endpoint: invalid log destination "http://x:1": scheme must be tcp or udp`,
				`machine.logging.destinations[0].format: unsupported logging format "text" (expected json_lines)`,
				`machine.nodeLabels["bad key!"]: invalid key "bad key!": the name must start and end with a letter or digit, with only letters, digits, '-', '_' and '.' between`,
				`machine.nodeTaints["dedicated"]: invalid taint "infra:Sometimes": the effect "Sometimes" must be NoSchedule, PreferNoSchedule or NoExecute (write [value:]effect)`,
			},
		},
		{
			name:     "unknown mode",
			patch:    `{}`,
			mode:     "baremetal",
			wantErrs: []string{`unknown validation mode "baremetal" (expected metal, container or cloud)`},
		},
	})
}
