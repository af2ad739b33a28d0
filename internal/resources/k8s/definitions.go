package k8s

import "github.com/talosbox/talosbox/internal/bus"

// Definitions are the types this package publishes, for `talosctl get`.
var Definitions = []bus.Definition{
	{Type: StaticPodType, DefaultNamespace: NamespaceK8s, Aliases: []string{"staticpod", "staticpods"}},
	{Type: StaticPodStatusType, DefaultNamespace: NamespaceK8s, Aliases: []string{"staticpodstatus", "podstatus", "sps"},
		PrintColumns: []bus.PrintColumn{{Name: "READY", JSONPath: `{.conditions[?(@.type=="Ready")].status}`}}},
	{Type: StaticPodServerStatusType, DefaultNamespace: NamespaceK8s, Aliases: []string{"staticpodserverstatus"},
		PrintColumns: []bus.PrintColumn{{Name: "URL", JSONPath: "{.url}"}}},
	{Type: KubeletConfigType, DefaultNamespace: NamespaceK8s, Aliases: []string{"kubeletconfig", "kc"}},
	{Type: KubeletSpecType, DefaultNamespace: NamespaceK8s, Aliases: []string{"kubeletspec", "ks"}},
	{Type: NodenameType, DefaultNamespace: NamespaceK8s, Aliases: []string{"nodename"},
		PrintColumns: []bus.PrintColumn{{Name: "NODENAME", JSONPath: "{.nodename}"}}},
	{Type: NodeIPType, DefaultNamespace: NamespaceK8s, Aliases: []string{"nodeip", "nip"},
		PrintColumns: []bus.PrintColumn{{Name: "ADDRESSES", JSONPath: "{.addresses}"}}},
	{Type: NodeIPConfigType, DefaultNamespace: NamespaceK8s, Aliases: []string{"nodeipconfig"}},
	{Type: APIServerConfigType, DefaultNamespace: NamespaceControlPlane, Aliases: []string{"apiserverconfig"}},
	{Type: ControllerManagerConfigType, DefaultNamespace: NamespaceControlPlane, Aliases: []string{"controllermanagerconfig"}},
	{Type: SchedulerConfigType, DefaultNamespace: NamespaceControlPlane, Aliases: []string{"schedulerconfig"}},
	{Type: SecretsStatusType, DefaultNamespace: NamespaceControlPlane, Aliases: []string{"secretstatus", "secretsstatus", "secretsstatuses"},
		PrintColumns: []bus.PrintColumn{{Name: "READY", JSONPath: "{.ready}"}, {Name: "SECRETS VERSION", JSONPath: "{.version}"}}},
	{Type: ConfigStatusType, DefaultNamespace: NamespaceControlPlane, Aliases: []string{"configstatus"},
		PrintColumns: []bus.PrintColumn{{Name: "READY", JSONPath: "{.ready}"}, {Name: "SECRETS VERSION", JSONPath: "{.version}"}}},
	// Sensitive, as in Talos: the bootstrap manifests hold the bootstrap
	// token's Secret, with which a node credential can be had.
	{Type: ManifestType, DefaultNamespace: NamespaceControlPlane, Aliases: []string{"manifest", "manifests"}, Sensitive: true},
	{Type: ManifestStatusType, DefaultNamespace: NamespaceControlPlane, Aliases: []string{"manifeststatus"},
		PrintColumns: []bus.PrintColumn{
			{Name: "PRUNE", JSONPath: "{.prune}"}, {Name: "CREATED", JSONPath: "{.counts.created}"},
			{Name: "UPDATED", JSONPath: "{.counts.updated}"}, {Name: "UNCHANGED", JSONPath: "{.counts.unchanged}"},
			{Name: "PRUNED", JSONPath: "{.counts.pruned}"}, {Name: "KEPT", JSONPath: "{.counts.kept}"},
		}},
	{Type: KubePrismEndpointsType, DefaultNamespace: NamespaceK8s, Aliases: []string{"kubeprismendpoint", "kubeprismendpoints"},
		PrintColumns: []bus.PrintColumn{{Name: "ENDPOINTS", JSONPath: "{.endpoints[*].host}"}}},
	{Type: KubePrismStatusType, DefaultNamespace: NamespaceK8s, Aliases: []string{"kubeprismstatus", "kubeprismstatuses", "kps"},
		PrintColumns: []bus.PrintColumn{{Name: "HOST", JSONPath: "{.host}"}, {Name: "HEALTHY", JSONPath: "{.healthy}"}}},
}
