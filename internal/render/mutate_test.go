package render_test

import (
	"strings"

	"github.com/talosbox/talosbox/configs"
)

// mutator reads the fuzzer's bytes as structural changes to a config: each
// change picks a setter and the values it needs, so a few bytes reach the
// places renderers read (flags, subnets, manifests, files) rather than
// breaking the YAML.
type mutator struct {
	b []byte
}

func (m *mutator) byte() byte {
	if len(m.b) == 0 {
		return 0
	}

	c := m.b[0]
	m.b = m.b[1:]

	return c
}

// words are values that reach the renderers' edges.
var words = []string{
	"", "0", "1", "-1", "true", "false", "x", "a=b", "a,b", "=", ",", "$", "\"", "'", "\n", " ", "---", "#",
	"10.96.0.0/12", "10.96.0.0/30", "10.244.0.0/16", "fd00::/120", "fd00:10:96::/112", "::/0", "0.0.0.0/0", "!10.5.0.0/24",
	"10.5.0.2", "127.0.0.1", "https://10.5.0.2:6443", "http://0.0.0.0:2381", "http://host.example:2381",
	"registry.k8s.io/kube-apiserver:v1.34.12", "ghcr.io/x/y:v1.33.0", "image:latest", "x@sha256:0000",
	"cluster.local", "Cluster.Local", "a_b", "kube-proxy", "ipvs", "nftables", "iptables",
	"etcd-servers", "authorization-mode", "feature-gates", "v", "kubeconfig", "node-ip", "hostname-override",
	"snapshot-count", "heartbeat-interval", "election-timeout", "quota-backend-bytes", "listen-metrics-urls",
	"experimental-initial-corrupt-check", "cipher-suites", "tls-min-version", "TLS1.3", "LeaseCheckpointPersist=true",
	"port", "maxPods", "staticPodPath", "registerWithTaints", "clusterDNS",
	"/var/x", "/etc/cri/conf.d/20-customization.part", "/etc/cri/conf.d/hosts/a/hosts.toml", "/var/../etc/x", "relative",
	"create", "append", "overwrite", "[plugins]\nx = 1\n", "version = 2\n", "[plugins.'io.containerd.cri.v1.images']\nsnapshotter = 1\n",
	"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n", "kind: X\n", "apiVersion: v1\nkind: List\nitems: [1]\n", "[1, 2]", "{a: 1}",
	"abcdef.0123456789abcdef", "ABCDEF.0123456789abcdef", "net.ipv4.ip_forward", "a..b", "a/../b",
	"docker.io", "*", "registry.example:5000", "custom", "none", "flannel", "--iface=eth0",
	".nan", ".inf", "items", "[1]", "--- !x", "--- # c", "ConfigMapList", "0x10", "&a [*a]", "!!binary aGk=", "? [a]", "<<",
}

// rawString is the byte after which the next bytes spell a string: every
// other byte is a word, so that most inputs are values worth trying.
const rawString = 0xf0

// str is a word, or a string the bytes spell (a length, then the bytes).
func (m *mutator) str() string {
	c := m.byte()
	if c < rawString {
		return words[int(c)%len(words)]
	}

	n := min(int(m.byte()%32), len(m.b))
	s := string(m.b[:n])
	m.b = m.b[n:]

	return s
}

func (m *mutator) strs() []string {
	out := make([]string, int(m.byte()%4))
	for i := range out {
		out[i] = m.str()
	}

	return out
}

func (m *mutator) apply(c *configs.Config) {
	for len(m.b) > 0 {
		op := int(m.byte()) % len(setters)
		setters[op](m, c)
	}
}

func ensure[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}

	return *p
}

func setKey(mp *map[string]string, k, v string) {
	if *mp == nil {
		*mp = map[string]string{}
	}

	(*mp)[k] = v
}

// setArg sets one extra arg, making the map if needed.
func setArg(a *configs.Args, k string, v configs.ArgValue) {
	if *a == nil {
		*a = configs.Args{}
	}

	(*a)[k] = v
}

func cluster(c *configs.Config) *configs.ClusterConfig { return ensure(&c.Cluster) }

func network(c *configs.Config) *configs.ClusterNetworkConfig { return ensure(&cluster(c).Network) }

func machine(c *configs.Config) *configs.MachineConfig { return ensure(&c.Machine) }

func kubelet(c *configs.Config) *configs.KubeletConfig { return ensure(&machine(c).Kubelet) }

var setters = []func(*mutator, *configs.Config){
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).APIServer).ExtraArgs, m.str(), configs.ArgString(m.str()))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).ControllerManager).ExtraArgs, m.str(), configs.ArgString(m.str()))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).Scheduler).ExtraArgs, m.str(), configs.ArgString(m.str()))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).Proxy).ExtraArgs, m.str(), configs.ArgString(m.str()))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).Etcd).ExtraArgs, m.str(), configs.ArgString(m.str()))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&kubelet(c).ExtraArgs, m.str(), configs.ArgString(m.str()))
	},
	func(m *mutator, c *configs.Config) { setKey(&ensure(&cluster(c).APIServer).Env, m.str(), m.str()) },
	func(m *mutator, c *configs.Config) { ensure(&cluster(c).APIServer).Image = m.str() },
	func(m *mutator, c *configs.Config) { ensure(&cluster(c).Proxy).Image = m.str() },
	func(m *mutator, c *configs.Config) { ensure(&cluster(c).Proxy).Mode = m.str() },
	func(m *mutator, c *configs.Config) { p := ensure(&cluster(c).Proxy); p.Disabled = !p.Disabled },
	func(m *mutator, c *configs.Config) {
		d := ensure(&cluster(c).CoreDNS)
		d.Disabled, d.Image = !d.Disabled, m.str()
	},
	func(m *mutator, c *configs.Config) { kubelet(c).Image = m.str() },
	func(m *mutator, c *configs.Config) { network(c).ServiceSubnets = m.strs() },
	func(m *mutator, c *configs.Config) { network(c).PodSubnets = m.strs() },
	func(m *mutator, c *configs.Config) { network(c).DNSDomain = m.str() },
	func(m *mutator, c *configs.Config) {
		cni := ensure(&network(c).CNI)
		cni.Name, cni.URLs = m.str(), m.strs()
	},
	func(m *mutator, c *configs.Config) { ensure(&ensure(&network(c).CNI).Flannel).ExtraArgs = m.strs() },
	func(m *mutator, c *configs.Config) { cluster(c).Token = m.str() },
	func(m *mutator, c *configs.Config) { ensure(&cluster(c).ControlPlane).Endpoint = m.str() },
	func(m *mutator, c *configs.Config) {
		ensure(&cluster(c).ControlPlane).LocalAPIServerPort = int(m.byte()) * 300
	},
	func(m *mutator, c *configs.Config) {
		cluster(c).InlineManifests = append(cluster(c).InlineManifests, configs.InlineManifest{Name: m.str(), Contents: m.str() + m.str()})
	},
	func(m *mutator, c *configs.Config) {
		cluster(c).InlineManifests = append(cluster(c).InlineManifests, configs.InlineManifest{Name: "m",
			Contents: "apiVersion: v1\nkind: " + m.str() + "\nmetadata:\n  name: a\n" + m.str() + ": " + m.str() + "\n" + m.str() + "\n"})
	},
	func(m *mutator, c *configs.Config) { cluster(c).ExtraManifests = m.strs() },
	func(m *mutator, c *configs.Config) {
		cluster(c).AllowSchedulingOnControlPlanes = !cluster(c).AllowSchedulingOnControlPlanes
	},
	func(m *mutator, c *configs.Config) {
		e := ensure(&cluster(c).Etcd)
		e.AdvertisedSubnets, e.ListenSubnets = m.strs(), m.strs()
	},
	func(m *mutator, c *configs.Config) { ensure(&kubelet(c).NodeIP).ValidSubnets = m.strs() },
	func(m *mutator, c *configs.Config) { kubelet(c).ClusterDNS = m.strs() },
	func(m *mutator, c *configs.Config) {
		k := kubelet(c)
		if k.ExtraConfig == nil {
			k.ExtraConfig = configs.Unstructured{}
		}

		k.ExtraConfig[m.str()] = m.str()
	},
	func(m *mutator, c *configs.Config) {
		k := kubelet(c)
		k.SkipNodeRegistration, k.DisableManifestsDirectory = m.byte()&1 == 1, m.byte()&1 == 1
	},
	func(m *mutator, c *configs.Config) {
		kubelet(c).ExtraMounts = append(kubelet(c).ExtraMounts, configs.ExtraMount{Destination: m.str(), Source: m.str(), Type: m.str(), Options: m.strs()})
	},
	func(m *mutator, c *configs.Config) {
		on := m.byte()&1 == 1
		ensure(&ensure(&machine(c).Features).KubePrism).Enabled = &on
		machine(c).Features.KubePrism.Port = int(m.byte()) * 257
	},
	func(m *mutator, c *configs.Config) { ensure(&machine(c).Install).ExtraKernelArgs = m.strs() },
	func(m *mutator, c *configs.Config) { ensure(&machine(c).Install).Image = m.str() },
	func(m *mutator, c *configs.Config) {
		machine(c).Files = append(machine(c).Files, configs.MachineFile{Path: m.str(), Content: m.str(), Op: m.str(), Permissions: configs.FileMode(m.byte()) << 4})
	},
	func(m *mutator, c *configs.Config) {
		if machine(c).Sysctls == nil {
			machine(c).Sysctls = map[string]string{}
		}

		machine(c).Sysctls[m.str()] = m.str()
	},
	func(m *mutator, c *configs.Config) {
		r := ensure(&machine(c).Registries)
		if r.Mirrors == nil {
			r.Mirrors = map[string]configs.RegistryMirror{}
		}

		r.Mirrors[m.str()] = configs.RegistryMirror{Endpoints: m.strs(), SkipFallback: m.byte()&1 == 1, OverridePath: m.byte()&1 == 1}
	},
	func(m *mutator, c *configs.Config) {
		r := ensure(&machine(c).Registries)
		if r.Config == nil {
			r.Config = map[string]configs.RegistryConfig{}
		}

		r.Config[m.str()] = configs.RegistryConfig{
			Auth: &configs.RegistryAuth{Username: m.str(), Password: m.str()},
			TLS:  &configs.RegistryTLS{InsecureSkipVerify: m.byte()&1 == 1, CA: []byte(m.str())},
		}
	},
	func(m *mutator, c *configs.Config) {
		ensure(&cluster(c).Scheduler).Config = configs.Unstructured{m.str(): m.str()}
	},
	func(m *mutator, c *configs.Config) {
		a := ensure(&cluster(c).APIServer)
		a.AdmissionControl = append(a.AdmissionControl, configs.AdmissionPluginConfig{Name: m.str(), Configuration: configs.Unstructured{m.str(): m.str()}})
	},
	func(m *mutator, c *configs.Config) {
		a := ensure(&cluster(c).APIServer)
		a.ExtraVolumes = append(a.ExtraVolumes, configs.VolumeMount{HostPath: m.str(), MountPath: m.str()})
	},
	func(m *mutator, c *configs.Config) {
		ensure(&cluster(c).APIServer).Resources = &configs.ResourcesConfig{Requests: configs.Unstructured{m.str(): m.str()}}
	},
	func(m *mutator, c *configs.Config) {
		cp := ensure(&machine(c).ControlPlane)
		cp.Scheduler = &configs.DisabledToggle{Disabled: m.byte()&1 == 1}
		cp.ControllerManager = &configs.DisabledToggle{Disabled: m.byte()&1 == 1}
	},
	func(m *mutator, c *configs.Config) { ensure(&machine(c).Network).Hostname = strings.ToLower(m.str()) },
	func(m *mutator, c *configs.Config) {
		n := ensure(&machine(c).Network)
		n.Interfaces = append(n.Interfaces, configs.Device{Interface: "eth0", Addresses: m.strs()})
	},
	func(m *mutator, c *configs.Config) {
		if machine(c).Type == configs.MachineTypeWorker {
			machine(c).Type = configs.MachineTypeControlPlane
		} else {
			machine(c).Type = configs.MachineTypeWorker
		}
	},
	// Lists: the flag repeated, or (empty) left out.
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).APIServer).ExtraArgs, m.str(), configs.ArgList(m.strs()...))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).ControllerManager).ExtraArgs, m.str(), configs.ArgList(m.strs()...))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).Proxy).ExtraArgs, m.str(), configs.ArgList(m.strs()...))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&ensure(&cluster(c).Etcd).ExtraArgs, m.str(), configs.ArgList(m.strs()...))
	},
	func(m *mutator, c *configs.Config) {
		setArg(&kubelet(c).ExtraArgs, m.str(), configs.ArgList(m.strs()...))
	},
}
