package configs

import "github.com/talosbox/talosbox/configs/kubeflags"

// DeniedExtraArgs are the flags talosbox sets itself on each component,
// by the config path of its extraArgs (the flags Talos sets itself and refuses to have overridden):
// overriding one would point a component at files or peers the node does
// not manage, so validation refuses it instead of the node failing later.
var DeniedExtraArgs = map[string][]string{
	"cluster.apiServer.extraArgs": {"etcd-servers", "client-ca-file", "requestheader-client-ca-file", "proxy-client-cert-file",
		"proxy-client-key-file", "encryption-provider-config", "etcd-cafile", "etcd-certfile", "etcd-keyfile",
		"kubelet-client-certificate", "kubelet-client-key", "service-account-key-file", "service-account-signing-key-file",
		"tls-cert-file", "tls-private-key-file", "authorization-config"},
	"cluster.controllerManager.extraArgs": {"cluster-signing-cert-file", "cluster-signing-key-file", "authentication-kubeconfig",
		"authorization-kubeconfig", "root-ca-file", "service-account-private-key-file"},
	"cluster.scheduler.extraArgs": {"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "config"},
	"machine.kubelet.extraArgs":   {"bootstrap-kubeconfig", "kubeconfig", "container-runtime", "container-runtime-endpoint", "config", "cert-dir"},
	"cluster.proxy.extraArgs":     {"kubeconfig"},
}

// flagValues checks the values of one extraArgs flag the component knows
// (f): a list repeats the flag, which only a flag whose parser adds the
// values up takes (any other keeps the last one, silently dropping the
// rest); then each value as the flag's parser reads it.
func (v *validator) flagValues(kp, component string, ver KubeVersion, name string, f kubeflags.Flag, val ArgValue) {
	switch {
	case val.IsList() && len(val.List) == 0:
		v.warnf(kp, "an empty list gives %s no --%s at all: a value talosbox sets for it is dropped too (as in Talos)", component, name)

		return
	case len(val.List) > 1 && !f.Repeatable():
		v.errorf(kp, "--%s is given %d times (a list), but %s %s keeps only the last value of a %s flag: write one value (only list, map and array flags take repeats)",
			name, len(val.List), component, ver, f.Type)

		return
	}

	for i, s := range val.Values() {
		p := kp
		if val.IsList() {
			p = indexPath(kp, i)
		}

		if name == "feature-gates" {
			v.featureGateFlag(p, component, ver, s)
		} else if err := f.CheckValue(s); err != nil {
			v.errorf(p, "invalid value %q for --%s (%s): %v", s, name, f.Type, err)
		}
	}
}
