package configs

// k8sKinds are the document kinds of Talos's k8s family
// (pkg/machinery/config/types/k8s) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
//
// Every Kubernetes setting applies without a reboot (cluster.*, and
// machine.kubelet and the node's labels are live), so every kind is live.
// The kinds not wholly folded have settings the node reads from the
// document itself (doc_kube.go says which).
var k8sKinds = []kindInfo{
	{kind: "KubeAPIServerCAConfig", new: func() Document { return &KubeAPIServerCAConfig{} }, folded: true, live: true},
	{kind: "KubeAPIServerConfig", new: func() Document { return &KubeAPIServerConfig{} }, live: true},
	{kind: "KubeAdmissionControlConfig", new: func() Document { return &KubeAdmissionControlConfig{} }, named: true, folded: true, live: true},
	{kind: "KubeAggregatorCAConfig", new: func() Document { return &KubeAggregatorCAConfig{} }, live: true},
	{kind: "KubeAuditPolicyConfig", new: func() Document { return &KubeAuditPolicyConfig{} }, folded: true, live: true},
	{kind: "KubeAuthenticationConfig", new: func() Document { return &KubeAuthenticationConfig{} }, live: true},
	{kind: "KubeAuthorizerConfig", new: func() Document { return &KubeAuthorizerConfig{} }, named: true, live: true},
	{kind: "KubeClusterConfig", new: func() Document { return &KubeClusterConfig{} }, folded: true, live: true},
	{kind: "KubeControllerManagerConfig", new: func() Document { return &KubeControllerManagerConfig{} }, folded: true, live: true},
	{kind: "KubeCoreDNSConfig", new: func() Document { return &KubeCoreDNSConfig{} }, folded: true, live: true},
	{kind: "KubeCredentialProviderConfig", new: func() Document { return &KubeCredentialProviderConfig{} }, folded: true, live: true},
	{kind: "KubeEtcdEncryptionConfig", new: func() Document { return &KubeEtcdEncryptionConfig{} }, live: true},
	{kind: "KubeExternalManifestConfig", new: func() Document { return &KubeExternalManifestConfig{} }, named: true, live: true},
	{kind: "KubeFlannelCNIConfig", new: func() Document { return &KubeFlannelCNIConfig{} }, live: true},
	{kind: "KubeInlineManifestConfig", new: func() Document { return &KubeInlineManifestConfig{} }, named: true, folded: true, live: true},
	{kind: "KubeNetworkConfig", new: func() Document { return &KubeNetworkConfig{} }, folded: true, live: true},
	{kind: "KubeNodeConfig", new: func() Document { return &KubeNodeConfig{} }, folded: true, live: true},
	{kind: "KubePrismConfig", new: func() Document { return &KubePrismConfig{} }, folded: true, live: true},
	{kind: "KubeProxyConfig", new: func() Document { return &KubeProxyConfig{} }, live: true},
	{kind: "KubeSchedulerConfig", new: func() Document { return &KubeSchedulerConfig{} }, folded: true, live: true},
	{kind: "KubeServiceAccountConfig", new: func() Document { return &KubeServiceAccountConfig{} }, live: true},
	{kind: "KubeStaticPodConfig", new: func() Document { return &KubeStaticPodConfig{} }, named: true, folded: true, live: true},
	{kind: "KubeTalosAPIAccessConfig", new: func() Document { return &KubeTalosAPIAccessConfig{} }, folded: true, live: true},
	{kind: "KubeletConfig", new: func() Document { return &KubeletConfigDoc{} }, folded: true, live: true},
}
