// Package k8s runs Kubernetes on a node the way Talos does: controllers
// on the node's bus turn the machine config into the control plane's
// configs, secrets and static pods (served to the kubelet over loopback),
// the kubelet's spec and service, and the bootstrap manifests applied to
// the API server. Every resource carries Talos's type name and namespace,
// so `talosctl get staticpods` and Talos habits work unchanged.
package k8s

import (
	"github.com/talosbox/talosbox/internal/bus"
	k8srender "github.com/talosbox/talosbox/internal/k8s/render"
)

// Namespaces, as Talos has them.
const (
	NamespaceK8s          = "k8s"
	NamespaceControlPlane = "controlplane"
	NamespaceRuntime      = "runtime"
)

// Resource types, with Talos's names.
const (
	StaticPodType               = "StaticPods.kubernetes.talos.dev"
	StaticPodStatusType         = "StaticPodStatuses.kubernetes.talos.dev"
	StaticPodServerStatusType   = "StaticPodServerStatuses.kubernetes.talos.dev"
	KubeletConfigType           = "KubeletConfigs.kubernetes.talos.dev"
	KubeletSpecType             = "KubeletSpecs.kubernetes.talos.dev"
	NodenameType                = "Nodenames.kubernetes.talos.dev"
	NodeIPType                  = "NodeIPs.kubernetes.talos.dev"
	NodeIPConfigType            = "NodeIPConfigs.kubernetes.talos.dev"
	APIServerConfigType         = "APIServerConfigs.kubernetes.talos.dev"
	ControllerManagerConfigType = "ControllerManagerConfigs.kubernetes.talos.dev"
	SchedulerConfigType         = "SchedulerConfigs.kubernetes.talos.dev"
	SecretsStatusType           = "SecretStatuses.kubernetes.talos.dev"
	ConfigStatusType            = "ConfigStatuses.kubernetes.talos.dev"
	ManifestType                = "Manifests.kubernetes.talos.dev"
	ManifestStatusType          = "ManifestStatuses.kubernetes.talos.dev"
	KubePrismEndpointsType      = "KubePrismEndpoints.kubernetes.talos.dev"
	KubePrismStatusType         = "KubePrismStatuses.kubernetes.talos.dev"
	// BootstrapStatusType is Talos 0.9's; the seed's `get bs` still asks
	// for it. A static-pod control plane is never self-hosted.
	BootstrapStatusType = "BootstrapStatuses.v1alpha1.talos.dev"
)

// Singleton IDs.
const (
	KubeletID           = "kubelet"
	NodenameID          = "nodename"
	StaticPodServerID   = "static-pod-server-status"
	StaticPodsStatusID  = "static-pods"
	ManifestStatusID    = "manifests"
	KubePrismID         = "k8s-cluster"
	BootstrapStatusID   = "control-plane"
	APIServerID         = k8srender.APIServerID
	ControllerManagerID = k8srender.ControllerManagerID
	SchedulerID         = k8srender.SchedulerID
)

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
	{Type: BootstrapStatusType, DefaultNamespace: NamespaceRuntime, Aliases: []string{"bootstrapstatus", "bs"},
		PrintColumns: []bus.PrintColumn{{Name: "SELF HOSTED", JSONPath: "{.selfHosted}"}}},
}

// StaticPodSpec is one control-plane pod, as the kubelet gets it.
type StaticPodSpec struct {
	Pod map[string]any `yaml:"pod" json:"pod"`
}

// StaticPodStatusSpec is the pod's status as the kubelet reports it.
type StaticPodStatusSpec struct {
	PodStatus map[string]any `yaml:",inline" json:",inline"`
}

// StaticPodServerStatusSpec says where the kubelet reads static pods.
type StaticPodServerStatusSpec struct {
	URL string `yaml:"url" json:"url"`
}

// NodenameSpec is the name the node registers with.
type NodenameSpec struct {
	Nodename         string `yaml:"nodename" json:"nodename"`
	HostnameVersion  string `yaml:"hostnameVersion,omitempty" json:"hostnameVersion,omitempty"`
	SkipNodeRegistry bool   `yaml:"skipNodeRegistration,omitempty" json:"skipNodeRegistration,omitempty"`
}

// NodeIPSpec is the chosen node IP (one per family).
type NodeIPSpec struct {
	Addresses []string `yaml:"addresses" json:"addresses"`
}

// StatusSpec is SecretStatus and ConfigStatus: whether the files the
// static pods read are written, and their version.
type StatusSpec struct {
	Ready   bool   `yaml:"ready" json:"ready"`
	Version string `yaml:"version" json:"version"`
}

// ManifestSpec is one bootstrap manifest: its objects, in order.
type ManifestSpec struct {
	Items []map[string]any `yaml:"items" json:"items"`
	// Set (talosbox) is a digest of the IDs of all the manifests
	// rendered with this one. The apply controller acts only on a list
	// of manifests whose IDs match it, never on one caught halfway
	// through an update, which could look like removed manifests to
	// prune.
	Set string `yaml:"set,omitempty" json:"set,omitempty"`
	// Error (talosbox) says why the manifest could not be rendered this
	// time (an extraManifests URL that did not download); Items are then
	// the last ones rendered, if any, and its objects are not pruned.
	Error string `yaml:"error,omitempty" json:"error,omitempty"`
}

// ManifestStatusSpec says what applying the current manifests did: the
// manifests applied in full (Talos's field) and, a talosbox addition,
// each object by what happened to it ("Kind namespace/name"), over the
// runs that applied these manifests and this prune setting (a retry
// after an error adds to them).
type ManifestStatusSpec struct {
	ManifestsApplied []string `yaml:"manifestsApplied" json:"manifestsApplied"`
	// Prune is cluster.manifestsPrune as applied.
	Prune            bool     `yaml:"prune" json:"prune"`
	ObjectsCreated   []string `yaml:"objectsCreated,omitempty" json:"objectsCreated,omitempty"`
	ObjectsUpdated   []string `yaml:"objectsUpdated,omitempty" json:"objectsUpdated,omitempty"`
	ObjectsUnchanged []string `yaml:"objectsUnchanged,omitempty" json:"objectsUnchanged,omitempty"`
	// ObjectsPruned were deleted: talosbox's, and in no manifest.
	ObjectsPruned []string `yaml:"objectsPruned,omitempty" json:"objectsPruned,omitempty"`
	// ObjectsKept are talosbox's and in no manifest, but stay: prune is
	// off, they are Namespaces or CRDs, or the apply had errors.
	ObjectsKept []string `yaml:"objectsKept,omitempty" json:"objectsKept,omitempty"`
	// Counts are the lengths of the lists, for `talosctl get`'s columns.
	Counts ManifestCounts `yaml:"counts" json:"counts"`
	// Error is the last run's, until a run succeeds.
	Error string `yaml:"error,omitempty" json:"error,omitempty"`
}

// ManifestCounts count the objects of a ManifestStatusSpec.
type ManifestCounts struct {
	Created   int `yaml:"created" json:"created"`
	Updated   int `yaml:"updated" json:"updated"`
	Unchanged int `yaml:"unchanged" json:"unchanged"`
	Pruned    int `yaml:"pruned" json:"pruned"`
	Kept      int `yaml:"kept" json:"kept"`
}

// KubePrismEndpointsSpec are the API servers KubePrism balances.
type KubePrismEndpointsSpec struct {
	Endpoints []KubePrismEndpoint `yaml:"endpoints" json:"endpoints"`
}

// KubePrismEndpoint is one API server.
type KubePrismEndpoint struct {
	Host string `yaml:"host" json:"host"`
	Port int    `yaml:"port" json:"port"`
}

// KubePrismStatusSpec says where KubePrism listens and whether an API
// server answered its last check.
type KubePrismStatusSpec struct {
	Host    string `yaml:"host" json:"host"`
	Healthy bool   `yaml:"healthy" json:"healthy"`
	Error   string `yaml:"error,omitempty" json:"error,omitempty"`
}

// BootstrapStatusSpec is Talos 0.9's bootkube status.
type BootstrapStatusSpec struct {
	SelfHosted bool `yaml:"selfHosted" json:"selfHosted"`
}

// The resource types.
type (
	StaticPod             = bus.Typed[StaticPodSpec]
	StaticPodStatus       = bus.Typed[StaticPodStatusSpec]
	StaticPodServerStatus = bus.Typed[StaticPodServerStatusSpec]
	Nodename              = bus.Typed[NodenameSpec]
	NodeIP                = bus.Typed[NodeIPSpec]
	NodeIPConfig          = bus.Typed[NodeIPConfigSpec]
	ComponentConfig       = bus.Typed[ComponentConfigSpec]
	Status                = bus.Typed[StatusSpec]
	KubeletSpec           = bus.Typed[KubeletSpecSpec]
	Manifest              = bus.Typed[ManifestSpec]
	ManifestStatus        = bus.Typed[ManifestStatusSpec]
	BootstrapStatus       = bus.Typed[BootstrapStatusSpec]
	KubePrismEndpoints    = bus.Typed[KubePrismEndpointsSpec]
	KubePrismStatus       = bus.Typed[KubePrismStatusSpec]
)
