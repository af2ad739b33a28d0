package configs

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/configs/kubeflags"
	"github.com/talosbox/talosbox/configs/kubeschema"
	"github.com/talosbox/talosbox/internal/images"
)

// kubeComponent is one Kubernetes component the config configures.
type kubeComponent struct {
	name  string // as kubeflags names it
	path  string // its config section
	image string // configured, or the default
	args  Args
}

// kubeComponents lists the components this node runs or renders, with
// the image each will run.
func (v *validator) kubeComponents(c *Config) []kubeComponent {
	var out []kubeComponent

	if m := c.Machine; m != nil {
		img := images.Kubelet(images.Kubernetes).String()

		var args Args

		if m.Kubelet != nil {
			args = m.Kubelet.ExtraArgs
			if m.Kubelet.Image != "" {
				img = m.Kubelet.Image
			}
		}

		out = append(out, kubeComponent{kubeflags.Kubelet, "machine.kubelet", img, args})
	}

	cl := c.Cluster
	if cl == nil || !v.controlPlane() {
		return out
	}

	pick := func(img string, def images.Ref) string {
		if img != "" {
			return img
		}

		return def.String()
	}

	var (
		api   = &APIServerConfig{}
		cm    = &ControllerManager{}
		sched = &SchedulerConfig{}
		proxy = &ProxyConfig{}
	)

	if cl.APIServer != nil {
		api = cl.APIServer
	}

	if cl.ControllerManager != nil {
		cm = cl.ControllerManager
	}

	if cl.Scheduler != nil {
		sched = cl.Scheduler
	}

	if cl.Proxy != nil {
		proxy = cl.Proxy
	}

	out = append(out,
		kubeComponent{kubeflags.APIServer, "cluster.apiServer", pick(api.Image, images.APIServer(images.Kubernetes)), api.ExtraArgs},
		kubeComponent{kubeflags.ControllerManager, "cluster.controllerManager", pick(cm.Image, images.ControllerManager(images.Kubernetes)), cm.ExtraArgs},
		kubeComponent{kubeflags.Scheduler, "cluster.scheduler", pick(sched.Image, images.Scheduler(images.Kubernetes)), sched.ExtraArgs},
	)

	if !proxy.Disabled {
		out = append(out, kubeComponent{kubeflags.Proxy, "cluster.proxy", pick(proxy.Image, images.Proxy(images.Kubernetes)), proxy.ExtraArgs})
	}

	return out
}

// kubernetes checks what the Kubernetes components would refuse at start:
// versions talosbox cannot run, version skew between them, and extraArgs
// the component that will run does not know or cannot parse.
func (v *validator) kubernetes(c *Config) {
	versions := map[string]KubeVersion{}
	v.kubeVersions = versions

	for _, comp := range v.kubeComponents(c) {
		if checkImage(comp.image) != nil {
			continue // reported with the image
		}

		ver, err := KubeVersionOfImage(comp.image)
		if err != nil {
			v.errorf(comp.path+".image", "%v", err)
		} else if err := checkKubeSupported(ver); err != nil {
			v.errorf(comp.path+".image", "%v (image %q)", err, comp.image)
		} else {
			versions[comp.name] = ver
		}

		ver, known := versions[comp.name]
		v.componentArgs(comp, ver, known)
	}

	v.versionSkew(versions)
	v.serviceSubnetSizes(c)
	v.derivedArgs(c)
	v.admissionPlugins(c)
}

// componentArgs checks a component's extraArgs against the flags its
// binary, at the version that will run, accepts.
func (v *validator) componentArgs(comp kubeComponent, ver KubeVersion, known bool) {
	p := comp.path + ".extraArgs"

	var set *kubeflags.Set

	if known {
		s, match := kubeflags.For(comp.name, ver.String())
		if match != kubeflags.None {
			set = s
		} else if len(comp.args) > 0 {
			v.warnf(p, "no flag list for %s %s in this talosbox build: its extraArgs are not checked", comp.name, ver)
		}
	}

	denied := DeniedExtraArgs[p]

	for _, k := range comp.args.Names() {
		kp := keyPath(p, k)

		switch {
		case k == "":
			v.errorf(kp, "extra arg name is empty")

			continue
		case strings.HasPrefix(k, "-"):
			v.errorf(kp, "write the flag without leading dashes: %q, not %q (talosbox adds them)", strings.TrimLeft(k, "-"), k)

			continue
		case strings.ContainsAny(k, "= \t\n"):
			v.errorf(kp, "invalid flag name %q: the value goes after the colon, not in the name", k)

			continue
		case containsString(denied, k):
			v.errorf(kp, "extra arg %q is not allowed: talosbox sets it itself", k)

			continue
		}

		if set == nil {
			continue
		}

		f, ok := set.Lookup(k)
		if !ok {
			msg := fmt.Sprintf("%s %s has no flag --%s: it would refuse to start", comp.name, ver, k)
			if note := removedFlagNote(comp.name, ver, k); note != "" {
				msg = fmt.Sprintf("%s: %s %s would refuse to start", note, comp.name, ver)
			} else if s := set.Suggest(k); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}

			v.errorf(kp, "%s", msg)

			continue
		}

		v.flagValues(kp, comp.name, ver, k, f, comp.args[k])

		// The kubelet calls nearly every flag deprecated in favour of its
		// config file; a warning for each would be noise.
		if f.Deprecated && comp.name != kubeflags.Kubelet {
			v.warnf(kp, "--%s is deprecated in %s %s", k, comp.name, ver)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}

	return false
}

// versionSkew applies Kubernetes' version skew policy between the
// components of one node: nothing newer than the API server; the
// controller-manager and scheduler at most one minor older, the kubelet
// and kube-proxy at most three. One minor newer than the API server is a
// warning, not a refusal: it is where a rollback by config passes (the
// API server's image is patched back first, as Talos 0.9's rollback guide does), and
// it runs; two or more is refused. Older than the policy allows is a
// warning: it runs, unsupported.
func (v *validator) versionSkew(versions map[string]KubeVersion) {
	api, ok := versions[kubeflags.APIServer]
	if !ok {
		return
	}

	for _, c := range []struct {
		name, path string
		older      int
	}{
		{kubeflags.ControllerManager, "cluster.controllerManager.image", 1},
		{kubeflags.Scheduler, "cluster.scheduler.image", 1},
		{kubeflags.Proxy, "cluster.proxy.image", 3},
		{kubeflags.Kubelet, "machine.kubelet.image", 3},
	} {
		ver, ok := versions[c.name]
		if !ok {
			continue
		}

		switch d := ver.minorsAfter(api); {
		case d > 1:
			v.errorf(c.path, "%s %s is %d minor versions newer than kube-apiserver %s: a component must never be newer than the API server (upgrade the API server first: talosctl upgrade-k8s)", c.name, ver, d, api)
		case d == 1:
			v.warnf(c.path, "%s %s is newer than kube-apiserver %s, which Kubernetes' skew policy does not support: upgrade the API server too, or roll this component back", c.name, ver, api)
		case -d > c.older:
			v.warnf(c.path, "%s %s is %d minor versions older than kube-apiserver %s: Kubernetes supports at most %d", c.name, ver, -d, api, c.older)
		}
	}
}

// derivedArgs refuses extraArgs that would override, with another value,
// a flag talosbox derives from the config: the component would then
// disagree with the rest of the node (KubePrism and the health checks
// dial localAPIServerPort; flannel and the kubelets use podSubnets and
// serviceSubnets).
func (v *validator) derivedArgs(c *Config) {
	if c.Cluster == nil || !v.controlPlane() {
		return
	}

	cl := c.Cluster

	pods, svcs := []string{defaultPodSubnet}, []string{defaultServiceSubnet}
	if n := cl.Network; n != nil {
		if len(n.PodSubnets) > 0 {
			pods = n.PodSubnets
		}

		if len(n.ServiceSubnets) > 0 {
			svcs = n.ServiceSubnets
		}
	}

	type derived struct {
		args        Args
		path, flag  string
		want        string
		from, shape string
	}

	var checks []derived

	if a := cl.APIServer; a != nil {
		checks = append(checks,
			derived{a.ExtraArgs, "cluster.apiServer.extraArgs", "secure-port", strconv.Itoa(c.LocalAPIServerPort()), "cluster.controlPlane.localAPIServerPort", "port"},
			derived{a.ExtraArgs, "cluster.apiServer.extraArgs", "service-cluster-ip-range", strings.Join(svcs, ","), "cluster.network.serviceSubnets", "cidrs"})
	}

	if cm := cl.ControllerManager; cm != nil {
		checks = append(checks, derived{cm.ExtraArgs, "cluster.controllerManager.extraArgs", "cluster-cidr", strings.Join(pods, ","), "cluster.network.podSubnets", "cidrs"})
	}

	if px := cl.Proxy; px != nil {
		checks = append(checks, derived{px.ExtraArgs, "cluster.proxy.extraArgs", "cluster-cidr", strings.Join(pods, ","), "cluster.network.podSubnets", "cidrs"})
	}

	for _, d := range checks {
		// A repeated flag is refused as such (componentArgs); an empty
		// list would drop the flag talosbox sets.
		got, ok := d.args.Get(d.flag)
		if !d.args.Has(d.flag) || (!ok && len(d.args.Values(d.flag)) > 1) || (ok && sameValue(got, d.want, d.shape)) {
			continue
		}

		v.errorf(keyPath(d.path, d.flag), "talosbox sets --%s=%s from %s: set that instead (a different value here would split the cluster's view of its network)", d.flag, d.want, d.from)
	}
}

// sameValue compares flag values by meaning: CIDR lists by their prefixes.
func sameValue(a, b, shape string) bool {
	if shape != "cidrs" {
		return strings.TrimSpace(a) == strings.TrimSpace(b)
	}

	canon := func(s string) string {
		var out []string

		for p := range strings.SplitSeq(s, ",") {
			if pr, err := netip.ParsePrefix(strings.TrimSpace(p)); err == nil {
				out = append(out, pr.Masked().String())
			} else {
				out = append(out, strings.TrimSpace(p))
			}
		}

		return strings.Join(out, ",")
	}

	return canon(a) == canon(b)
}

// admissionPlugins checks the plugin names of --enable-admission-plugins
// and --disable-admission-plugins against the ones the kube-apiserver that
// will run knows: it exits on any other.
func (v *validator) admissionPlugins(c *Config) {
	api, ok := v.kubeVersions[kubeflags.APIServer]
	if !ok || c.Cluster == nil || c.Cluster.APIServer == nil {
		return
	}

	known, from := kubeschema.AdmissionPlugins(api.String())
	if known == nil {
		return
	}

	for _, flag := range []string{"enable-admission-plugins", "disable-admission-plugins"} {
		list := c.Cluster.APIServer.ExtraArgs.Joined(flag) // repeats add up
		if list == "" {
			continue
		}

		for name := range strings.SplitSeq(list, ",") {
			if name = strings.TrimSpace(name); name == "" || slices.Contains(known, name) {
				continue
			}

			msg := fmt.Sprintf("kube-apiserver %s has no admission plugin %q: it would refuse to start", from, name)
			if s := suggest(name, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}

			v.errorf(keyPath("cluster.apiServer.extraArgs", flag), "%s", msg)
		}
	}
}
