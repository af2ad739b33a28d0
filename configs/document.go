package configs

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// A machine config is a stream of YAML documents, as Talos has read it
// since 1.5 and written it since 1.12: the v1alpha1 document (`version:
// v1alpha1`, with the machine and cluster sections; optional) and typed
// documents, each naming its apiVersion and kind (HostnameConfig,
// ResolverConfig, KubeletConfig, ...).
//
// The node reads one effective config. A document that stands for
// v1alpha1 fields is folded into them (a HostnameConfig's hostname is
// machine.network.hostname), so every controller reads a setting in one
// place, whichever way it was written; Talos refuses a config that sets
// the same thing both ways, and so does Validate. Documents with no
// v1alpha1 counterpart are read from Config.Documents. What was written
// is kept apart from what is in effect: Encode, the redacted encoding, the
// diff and the patches work on the documents as written.

// DocumentAPIVersion is the apiVersion of every typed document.
const DocumentAPIVersion = "v1alpha1"

// Document is a typed config document. Every kind is defined in this
// package (documentKinds); consumers read them with DocumentsOf.
type Document interface {
	// Kind is the document's kind, as written in its `kind` key.
	Kind() string
	// check validates the document alone, at path (its DocumentPath).
	check(v *validator, path string)
	// fold writes what the document says into the effective config.
	fold(f *folding)
}

// residual is a document only partly folded into v1alpha1 fields:
// residue is the part the node reads from the document itself (nil when
// there is none), which Compare compares.
type residual interface {
	residue() Document
}

// NamedDocument is a document of a kind that may appear once per name
// (RegistryMirrorConfig per registry, LinkConfig per link).
type NamedDocument interface {
	Document
	// DocumentName is its name key.
	DocumentName() string
}

// kindInfo describes one document kind.
type kindInfo struct {
	kind string
	new  func() Document
	// named kinds are told apart by their name key.
	named bool
	// folded kinds say nothing that is not folded into v1alpha1 fields:
	// their changes are compared (and judged live or not) as changes of
	// those fields.
	folded bool
	// live means a change to a document of this (not folded) kind
	// applies without a reboot.
	live bool
}

// KindNamed reports whether documents of kind are told apart by their
// name key; known is false for a kind talosbox does not implement.
func KindNamed(kind string) (named, known bool) {
	ki, known := documentKinds[kind]

	return ki.named, known
}

// MergeReplaces reports whether a strategic merge patch replaces the
// value at path (field names below the document, as written) of a
// document of kind instead of merging into it: the fields tagged
// `merge:"replace"`, as Talos marks them (pod subnets, free-form
// configurations).
func MergeReplaces(kind string, path []string) bool {
	ki, ok := documentKinds[kind]
	if !ok || len(path) == 0 {
		return false
	}

	t := reflect.TypeOf(ki.new())

	for i, name := range path {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}

		if t.Kind() != reflect.Struct {
			return false
		}

		idx, ok := fieldsOf(t).index[name]
		if !ok {
			return false
		}

		f := t.Field(idx)
		if i == len(path)-1 {
			return f.Tag.Get("merge") == "replace"
		}

		t = f.Type
	}

	return false
}

// DocumentChangeLive reports whether a change under the path element
// elem (a DocumentPath, the first element of a Change's Path) applies
// without a reboot; ok is false when elem names no document kind.
func DocumentChangeLive(elem string) (live, ok bool) {
	kind, _, _ := strings.Cut(elem, "[")

	ki, ok := documentKinds[kind]

	return ki.live, ok
}

// documentKinds are the kinds talosbox implements, by kind, built once
// from each family's list.
var documentKinds = func() map[string]kindInfo {
	m := map[string]kindInfo{}

	for _, family := range [][]kindInfo{networkKinds, runtimeKinds, criKinds, securityKinds, clusterKinds, blockKinds, k8sKinds} {
		for _, k := range family {
			if _, dup := m[k.kind]; dup {
				panic("configs: document kind " + k.kind + " registered twice")
			}

			m[k.kind] = k
		}
	}

	return m
}()

// ImplementedKinds lists the document kinds talosbox reads, sorted.
func ImplementedKinds() []string {
	out := make([]string, 0, len(documentKinds))
	for k := range documentKinds {
		out = append(out, k)
	}

	slices.Sort(out)

	return out
}

// DocumentPath is where a document's fields sit in config paths, in
// problems and positions: its kind, and for named kinds its name as a map
// key (`RegistryMirrorConfig["ghcr.io"].endpoints[0].url`).
func DocumentPath(d Document) string {
	if n, ok := d.(NamedDocument); ok {
		return documentPath(d.Kind(), n.DocumentName(), true)
	}

	return d.Kind()
}

func documentPath(kind, name string, named bool) string {
	if !named {
		return kind
	}

	return kind + "[" + strconv.Quote(name) + "]"
}

// documentID names a document in messages: `HostnameConfig`,
// `LinkConfig "eth0"`.
func documentID(kind, name string, named bool) string {
	if !named {
		return kind
	}

	return fmt.Sprintf("%s %q", kind, name)
}

// DocumentsOf returns the config's documents of type T, in the order
// written: DocumentsOf[*configs.FilesystemTrimConfig](cfg).
func DocumentsOf[T Document](c *Config) []T {
	if c == nil {
		return nil
	}

	var out []T

	for _, d := range c.Documents {
		if t, ok := d.(T); ok {
			out = append(out, t)
		}
	}

	return out
}

// DocumentOf returns the config's document of the singleton type T, or
// the zero T (nil) when it has none.
func DocumentOf[T Document](c *Config) T {
	var zero T

	if docs := DocumentsOf[T](c); len(docs) > 0 {
		return docs[0]
	}

	return zero
}

// unknownKindMessage explains a kind talosbox does not read: one of
// Talos's it does not implement yet, or a kind nobody defines (with the
// closest name when there is one).
func unknownKindMessage(kind, apiVersion string, listed bool) string {
	implemented := strings.Join(ImplementedKinds(), ", ")
	if listed {
		implemented = "listed above"
	}

	if slices.Contains(talosKinds, kind) {
		return fmt.Sprintf("document kind %s (apiVersion %s) is a Talos config document talosbox does not implement yet; the kinds it implements are: %s",
			kind, apiVersion, implemented)
	}

	msg := fmt.Sprintf("unknown document kind %q", kind)
	if s := suggest(kind, append(ImplementedKinds(), talosKinds...)); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}

	return msg + "; the kinds talosbox implements are: " + implemented
}

// talosKinds are every document kind Talos defines (its
// pkg/machinery/config/types, at the version REFERENCE.md names), so a
// config written for Talos that uses one talosbox lacks is told so by
// name, not called a typo.
var talosKinds = []string{
	"BGPInstanceConfig", "BlackholeRouteConfig", "BondConfig", "BridgeConfig",
	"CRIBaseRuntimeSpecConfig", "CRICustomizationConfig", "ContainerConfig",
	"DHCPv4Config", "DHCPv6Config", "DiscoveryIdentityConfig", "DiscoveryServiceConfig",
	"DummyLinkConfig", "EnvironmentConfig", "EtcFileConfig", "EthernetConfig", "EventSinkConfig",
	"ExistingVolumeConfig", "ExtensionServiceConfig", "ExternalVolumeConfig",
	"FilesystemScrubConfig", "FilesystemTrimConfig", "HCloudVIPConfig", "HTTPProbeConfig",
	"HostnameConfig", "ImageCacheConfig", "ImageVerificationConfig", "KernelModuleConfig",
	"KmsgLogConfig", "KubeAPIServerCAConfig", "KubeAPIServerConfig", "KubeAdmissionControlConfig",
	"KubeAggregatorCAConfig", "KubeAuditPolicyConfig", "KubeAuthenticationConfig",
	"KubeAuthorizerConfig", "KubeClusterConfig", "KubeControllerManagerConfig", "KubeCoreDNSConfig",
	"KubeCredentialProviderConfig", "KubeEtcdEncryptionConfig", "KubeExternalManifestConfig",
	"KubeFlannelCNIConfig", "KubeInlineManifestConfig", "KubeNetworkConfig", "KubeNodeConfig",
	"KubePrismConfig", "KubeProxyConfig", "KubeSchedulerConfig", "KubeServiceAccountConfig",
	"KubeSpanConfig", "KubeSpanEndpointsConfig", "KubeStaticPodConfig", "KubeTalosAPIAccessConfig",
	"KubeletConfig", "LVMLogicalVolumeConfig", "LVMVolumeGroupConfig", "Layer2VIPConfig",
	"LinkAliasConfig", "LinkConfig", "NetworkDefaultActionConfig", "NetworkRuleConfig", "OOMConfig",
	"PCIDriverRebindConfig", "RAIDArrayConfig", "RawVolumeConfig", "RegistryAuthConfig",
	"RegistryMirrorConfig", "RegistryTLSConfig", "ResolverConfig", "RoutingRuleConfig",
	"SecurityProfileConfig", "SideroLinkConfig", "StaticHostConfig", "SwapVolumeConfig",
	"SysctlConfig", "SysfsConfig", "TCPProbeConfig", "TimeSyncConfig", "TrustedRootsConfig",
	"UdevRulesConfig", "UnattendedInstallConfig", "UserVolumeConfig", "VLANConfig", "VRFConfig",
	"VethConfig", "VolumeConfig", "WatchdogTimerConfig", "WireguardConfig", "ZswapConfig",
}
