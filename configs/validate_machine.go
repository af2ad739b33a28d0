package configs

import (
	"errors"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/talosbox/talosbox/internal/sysctl"
)

// MachineTypeJoin is the name machine.type had for workers before Talos
// v0.9; Talos still reads it as worker.
const MachineTypeJoin = "join"

// MachineTypeOf is the machine type a machine.type value means: "join" is
// "worker", as Talos's machine.ParseType has it; anything else is itself.
// Whatever shows or acts on a node's type (the MachineType resource, the
// discovery affiliate, worker-only rules) reads it through this.
func MachineTypeOf(t string) string {
	if t == MachineTypeJoin {
		return MachineTypeWorker
	}

	return t
}

func (v *validator) machine(m *MachineConfig) {
	const p = "machine"

	switch m.Type {
	case MachineTypeControlPlane, MachineTypeWorker:
	case MachineTypeJoin:
		v.warnf(p+".type", "use %q instead of %q for machine type", MachineTypeWorker, m.Type)
	case MachineTypeInit:
		v.warnf(p+".type", "machine type %q is deprecated: use %q and run talosctl bootstrap once", m.Type, MachineTypeControlPlane)
	default:
		v.errorf(p+".type", "unknown machine type %q", m.Type)
	}

	switch {
	case m.Token == "":
		v.errorf(p+".token", "trustd token is required (.machine.token)")
	case !tokenPattern().MatchString(m.Token):
		v.errorf(p+".token", "trustd token is invalid (expected [a-z0-9]{6}.[a-z0-9]{16})")
	}

	v.machineCA(m)

	for i, san := range m.CertSANs {
		v.check(indexPath(p+".certSANs", i), checkSAN(san))
	}

	if m.ControlPlane != nil && MachineTypeOf(m.Type) == MachineTypeWorker {
		v.warnf(p+".controlPlane", "has no effect on worker nodes")
	}

	v.kubelet(m.Kubelet)
	v.staticPods(m.Pods)

	if m.Network != nil {
		v.network(m.Network)
	}

	v.disks(m.Disks, m.Install)
	v.install(m.Install)
	v.files(m.Files)

	for _, k := range sortedKeys(m.Env) {
		if !envName().MatchString(k) {
			v.errorf(keyPath(p+".env", k), "invalid environment variable name %q", k)
		}
	}

	v.time(m.Time)
	v.kernelSettings(p+".sysctls", m.Sysctls)
	v.kernelSettings(p+".sysfs", m.Sysfs)
	v.registries(m.Registries)
	v.encryption(m.SystemDiskEncryption)
	v.features(m.Features)
	v.machineMisc(m)
	v.kubernetesMetadata(m)
}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

func (v *validator) machineCA(m *MachineConfig) {
	ca := m.CA
	if ca == nil {
		ca = &PEMCertificateAndKey{}
	}

	switch {
	case v.controlPlane():
		if len(ca.Key) == 0 {
			v.errorf("machine.ca.key", "issuing CA key is required for controlplane nodes (.machine.ca.key)")
		}

		if len(ca.Crt) == 0 {
			v.errorf("machine.ca.crt", "issuing CA certificate is required for controlplane nodes (.machine.ca.crt)")
		}
	case MachineTypeOf(m.Type) == MachineTypeWorker:
		if len(ca.Crt) == 0 && len(m.AcceptedCAs) == 0 {
			v.errorf("machine.ca.crt", "trusted CA certificates are required on non-controlplane nodes (.machine.ca.crt, .machine.acceptedCAs)")
		}

		if len(ca.Key) > 0 {
			v.errorf("machine.ca.key", "issuing Talos API CA key is not allowed on non-controlplane nodes (.machine.ca)")
		}
	}

	v.caPair("machine.ca", m.CA)

	for i, c := range m.AcceptedCAs {
		v.acceptedCA(indexPath("machine.acceptedCAs", i), c.Crt)
	}
}

func (v *validator) kubelet(k *KubeletConfig) {
	if k == nil {
		return
	}

	const p = "machine.kubelet"

	if k.Image != "" {
		v.check(p+".image", checkImage(k.Image))
	}

	for i, ip := range k.ClusterDNS {
		v.check(indexPath(p+".clusterDNS", i), checkIP("cluster DNS address", ip))
	}

	dests := map[string]int{}

	for i, mnt := range k.ExtraMounts {
		mp := indexPath(p+".extraMounts", i)

		switch j, dup := dests[path.Clean(mnt.Destination)]; {
		case mnt.Destination == "":
			v.errorf(mp+".destination", "mount destination is required")
		case checkAbsPath("mount destination", mnt.Destination) != nil:
			v.check(mp+".destination", checkAbsPath("mount destination", mnt.Destination))
		case dup:
			v.errorf(mp+".destination", "%s is already the destination of %s", mnt.Destination, indexPath(p+".extraMounts", j))
		}

		dests[path.Clean(mnt.Destination)] = i

		// A bind mount (the default type) needs something to bind.
		if (mnt.Type == "" || mnt.Type == "bind" || slices.Contains(mnt.Options, "bind") || slices.Contains(mnt.Options, "rbind")) && mnt.Source == "" {
			v.errorf(mp+".source", "a bind mount needs a source path")
		} else if mnt.Source != "" && (mnt.Type == "" || mnt.Type == "bind") {
			v.check(mp+".source", checkAbsPath("bind mount source", mnt.Source))
		}
	}

	v.kubeletNodeLabels(p+".extraArgs", k.ExtraArgs)
	v.kubeletTaints(p+".extraArgs", k.ExtraArgs)

	if k.NodeIP != nil {
		for i, s := range k.NodeIP.ValidSubnets {
			v.check(indexPath(p+".nodeIP.validSubnets", i), checkSubnetFilter(s))
		}
	}
}

func (v *validator) staticPods(pods []Unstructured) {
	names := map[string]int{}

	for i, pod := range pods {
		pp := indexPath("machine.pods", i)

		if pod["apiVersion"] != "v1" || pod["kind"] != "Pod" {
			v.errorf(pp, `static pod must have apiVersion "v1" and kind "Pod"`)

			continue
		}

		meta, _ := pod["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		ns, _ := meta["namespace"].(string)

		switch j, dup := names[ns+"/"+name]; {
		case name == "":
			v.errorf(pp+".metadata.name", "a static pod needs a name: the kubelet drops a pod without one")
		case dnsNameProblem(name) != "" || strings.ToLower(name) != name:
			v.errorf(pp+".metadata.name", "invalid pod name %q: a lowercase DNS name (a-z, 0-9, '-' and '.')", name)
		case dup:
			v.errorf(pp+".metadata.name", "pod %q is already machine.pods[%d]", name, j)
		}

		names[ns+"/"+name] = i

		if spec, ok := pod["spec"].(map[string]any); !ok {
			v.errorf(pp+".spec", "a pod needs a spec with its containers")
		} else if cs, _ := spec["containers"].([]any); len(cs) == 0 {
			v.errorf(pp+".spec.containers", "a pod needs at least one container")
		}
	}
}

// Labels the kubelet may set on its own node with --node-labels: in the
// kubernetes.io and k8s.io namespaces only these (NodeRestriction's set);
// anything else there makes the kubelet exit at start.
var (
	kubeletLabelPrefixes = []string{"kubelet.kubernetes.io/", "node.kubernetes.io/"}
	kubeletLabels        = []string{
		"kubernetes.io/hostname", "kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch",
		"beta.kubernetes.io/instance-type", "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
		"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
		"topology.kubernetes.io/zone", "topology.kubernetes.io/region", "node.kubernetes.io/instance-type",
	}
)

// kubeletNodeLabels checks the kubelet's --node-labels as it does at
// start.
func (v *validator) kubeletNodeLabels(p string, args Args) {
	values := args.Values("node-labels")
	if len(values) == 0 {
		return
	}

	list := strings.Join(values, ",") // repeats add up

	kp := keyPath(p, "node-labels")

	for _, kv := range strings.Split(list, ",") {
		k, val, _ := strings.Cut(kv, "=")
		if err := checkQualifiedName(k); err != nil {
			v.errorf(kp, "%v", err)

			continue
		}

		if err := checkLabelValue(val); err != nil {
			v.errorf(kp, "label %s: %v", k, err)
		}

		prefix, _, hasPrefix := strings.Cut(k, "/")
		kubeNS := hasPrefix && (prefix == "kubernetes.io" || prefix == "k8s.io" || strings.HasSuffix(prefix, ".kubernetes.io") || strings.HasSuffix(prefix, ".k8s.io"))

		if kubeNS && !slices.Contains(kubeletLabels, k) && !slices.ContainsFunc(kubeletLabelPrefixes, func(pre string) bool { return strings.HasPrefix(k, pre) }) {
			v.errorf(kp, "the kubelet refuses to set label %s on its node (kubernetes.io and k8s.io labels are limited to its own set): set it in machine.nodeLabels instead", k)
		}
	}
}

const (
	// criConfDir holds the TOML parts merged into the CRI config, in
	// name order; the user's is 20-customization.part.
	criConfDir = "/etc/cri/conf.d"
	// legacyCRIConfDir is where Talos v0.9 read CRI drop-ins from; older
	// guides still write there.
	legacyCRIConfDir = "/var/cri/conf.d"
)

// criFile catches CRI customisations that would not take effect: a part
// that is not TOML stops the CRI config from being merged at all (so the
// error is better at apply time than at boot), and the old drop-in
// directory is written but never read.
func (v *validator) criFile(fp string, f MachineFile) {
	p := path.Clean(f.Path)

	if _, _, err := MachineFilePlace(f.Path, nil); err != nil {
		return // never written: its place is the problem
	}

	if p == legacyCRIConfDir || strings.HasPrefix(p, legacyCRIConfDir+"/") {
		v.errorf(fp+".path", "%s is no longer read: put CRI customisations in %s/20-customization.part (op: create)", legacyCRIConfDir, criConfDir)

		return
	}

	// Only the directory's own *.part files are merged.
	if path.Dir(p) != criConfDir || !strings.HasSuffix(p, ".part") {
		return
	}

	if err := toml.Unmarshal([]byte(f.Content), &map[string]any{}); err != nil {
		if derr, ok := errors.AsType[*toml.DecodeError](err); ok {
			row, _ := derr.Position()
			v.errorf(fp+".content", "%s: line %d: %s", f.Path, row, strings.TrimPrefix(derr.Error(), "toml: "))
		} else {
			v.errorf(fp+".content", "%s: %s", f.Path, strings.TrimPrefix(err.Error(), "toml: "))
		}
	}
}

func (v *validator) time(t *TimeConfig) {
	if t == nil {
		return
	}

	const p = "machine.time"

	for i, s := range t.Servers {
		// NTS servers are written as nts://host.
		if !isIP(s) && !isDNSName(s) && checkURL("time server", s, "nts") != nil {
			v.errorf(indexPath(p+".servers", i), "invalid time server %q: must be an IP address or a host name", s)
		}
	}

	if t.BootTimeout < 0 {
		v.errorf(p+".bootTimeout", "must not be negative")
	}

	if t.Disabled && len(t.Servers) > 0 {
		v.warnf(p+".servers", "time servers are ignored while time sync is disabled")
	}
}

var kernelKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_.*/:-]+$`) })

func (v *validator) kernelSettings(path string, settings map[string]string) {
	root := "/proc/sys"
	if strings.HasSuffix(path, ".sysfs") {
		root = "/sys"
	}

	for _, k := range sortedKeys(settings) {
		if strings.HasPrefix(k, "/") {
			if rel := relativeKernelKey(k, root); strings.Contains(rel, "/") {
				v.errorf(keyPath(path, k), "keys are relative to %s, written with slashes when a part holds a dot (%s)", root, rel)
			} else {
				v.errorf(keyPath(path, k), "keys are relative to %s, written with dots (%s)", root, rel)
			}

			continue
		}

		if _, err := sysctl.SplitKey(k); err != nil {
			v.errorf(keyPath(path, k), "invalid key: %v", err)
		} else if !kernelKey().MatchString(k) {
			v.errorf(keyPath(path, k), "invalid key %q: only letters, digits and _ . * / : - are allowed", k)
		}
	}
}

// relativeKernelKey is what an absolute path to a sysctl or sysfs file
// is written as in the config: relative to root, dotted, or slashed when a
// part holds a dot (a VLAN's interface name).
func relativeKernelKey(k, root string) string {
	rel := strings.Trim(strings.TrimPrefix(path.Clean(k), root), "/")
	if rel == "" {
		rel = "net.ipv4.ip_forward"
		if root == "/sys" {
			rel = "kernel.mm.transparent_hugepage.enabled"
		}

		return "such as " + rel
	}

	if strings.Contains(rel, ".") {
		return rel
	}

	return strings.ReplaceAll(rel, "/", ".")
}

var talosRoles = []string{"os:admin", "os:operator", "os:reader", "os:etcd:backup"}

func (v *validator) features(f *FeaturesConfig) {
	if f == nil {
		return
	}

	const p = "machine.features"

	if a := f.KubernetesTalosAPIAccess; a != nil {
		if a.Enabled != nil && *a.Enabled && !v.controlPlane() {
			v.errorf(p+".kubernetesTalosAPIAccess", "feature API access from Kubernetes is only allowed on controlplane nodes")
		}

		for i, ns := range a.AllowedKubernetesNamespaces {
			if dnsLabel().MatchString(ns) && strings.ToLower(ns) == ns {
				continue
			}

			v.errorf(indexPath(p+".kubernetesTalosAPIAccess.allowedKubernetesNamespaces", i), "invalid namespace %q: a lowercase DNS label (a-z, 0-9 and '-', at most 63)", ns)
		}

		for i, role := range a.AllowedRoles {
			if !slices.Contains(talosRoles, role) {
				v.errorf(indexPath(p+".kubernetesTalosAPIAccess.allowedRoles", i), "invalid role %q (expected one of %s)", role, strings.Join(talosRoles, ", "))
			}
		}
	}

	if f.KubePrism != nil {
		v.check(p+".kubePrism.port", checkPort("KubePrism port", f.KubePrism.Port))
	}

	if h := f.HostDNS; h != nil && h.Enabled != nil && !*h.Enabled {
		if h.ForwardKubeDNSToHost != nil && *h.ForwardKubeDNSToHost {
			v.errorf(p+".hostDNS.forwardKubeDNSToHost", "feature hostDNS.forwardKubeDNSToHost requires hostDNS.enabled to be true (.machine.features.hostDNS)")
		}

		if h.ResolveMemberNames != nil && *h.ResolveMemberNames {
			v.errorf(p+".hostDNS.resolveMemberNames", "feature hostDNS.resolveMemberNames requires hostDNS.enabled to be true (.machine.features.hostDNS)")
		}
	}

	switch f.NodeAddressSortAlgorithm {
	case "", "v1", "v2":
	default:
		v.errorf(p+".nodeAddressSortAlgorithm", "unsupported algorithm %q (expected v1 or v2)", f.NodeAddressSortAlgorithm)
	}
}

func (v *validator) machineMisc(m *MachineConfig) {
	if m.Logging != nil {
		for i, d := range m.Logging.Destinations {
			dp := indexPath("machine.logging.destinations", i)

			if err := checkURL("log destination", d.Endpoint, "tcp", "udp"); err != nil {
				v.errorf(dp+".endpoint", "%v", err)
			} else if u, _ := url.Parse(d.Endpoint); u.Port() == "" {
				v.errorf(dp+".endpoint", "log destination %q has no port: the node would not know where to send (tcp://host:port)", d.Endpoint)
			}

			if d.Format != "json_lines" {
				v.errorf(dp+".format", "unsupported logging format %q (expected json_lines)", d.Format)
			}
		}
	}

	if m.Kernel != nil {
		for i, mod := range m.Kernel.Modules {
			if mod.Name == "" || strings.ContainsAny(mod.Name, "/ ") {
				v.errorf(indexPath("machine.kernel.modules", i)+".name", "invalid kernel module name %q", mod.Name)
			}

			if _, err := ModuleParams(mod.Parameters); err != nil {
				v.errorf(indexPath("machine.kernel.modules", i)+".parameters", "%v", err)
			}
		}

		if len(m.Kernel.Modules) > 0 && v.mode == ModeContainer {
			v.warnf("machine.kernel.modules", "kernel modules cannot be loaded in container mode")
		}
	}

	if m.Udev != nil {
		for i, rule := range m.Udev.Rules {
			if strings.TrimSpace(rule) == "" {
				v.errorf(indexPath("machine.udev.rules", i), "udev rule is empty")
			}
		}
	}

	names := map[string]bool{}

	for i, prof := range m.SeccompProfiles {
		sp := indexPath("machine.seccompProfiles", i)

		switch {
		case prof.Name == "":
			v.errorf(sp+".name", "seccomp profile name is required")
		case strings.ContainsAny(prof.Name, "/\\\x00") || prof.Name == "." || prof.Name == "..":
			v.errorf(sp+".name", "seccomp profile name %q must be a file name (it is written to the kubelet's seccomp directory)", prof.Name)
		case names[prof.Name]:
			v.errorf(sp+".name", "seccomp profile %q is declared twice", prof.Name)
		}

		names[prof.Name] = true

		if len(prof.Value) == 0 {
			v.errorf(sp+".value", "seccomp profile value is required")
		}
	}
}

// kubeletTaints checks the kubelet's --register-with-taints
// (key[=value]:effect, comma-separated) as it does at start.
func (v *validator) kubeletTaints(p string, args Args) {
	values := args.Values("register-with-taints")
	if len(values) == 0 {
		return
	}

	// Each value is checked; a repeat is refused as such (componentArgs).
	list := strings.Join(values, ",")

	kp := keyPath(p, "register-with-taints")

	for _, t := range strings.Split(list, ",") {
		kv, effect, found := strings.Cut(t, ":")
		k, val, _ := strings.Cut(kv, "=")

		switch {
		case !found:
			v.errorf(kp, "taint %q has no effect: write key[=value]:effect", t)
		case !slices.Contains(taintEffects, effect):
			v.errorf(kp, "taint %q: the effect %q must be NoSchedule, PreferNoSchedule or NoExecute", t, effect)
		default:
			v.check(kp, checkQualifiedName(k))
			v.check(kp, checkLabelValue(val))
		}
	}
}
