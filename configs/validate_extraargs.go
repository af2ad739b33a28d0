package configs

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
