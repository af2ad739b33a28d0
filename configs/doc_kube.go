package configs

import (
	"encoding/pem"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// What the Kubernetes documents (Talos's k8s family, written by gen config
// from Talos 1.14 in place of the cluster section) share: the checks
// Talos makes of every one of them and the sections of the effective
// config they fold into.
//
// Most of what these documents say is folded into the v1alpha1 fields
// the node already reads, so the v1alpha1 rules check it too and report
// it where the document wrote it. What v1alpha1 has no field for is read
// from the document by the node's renderers (internal/k8s/render,
// internal/k8s/secrets, the bootstrap manifests).

// controlPlaneOnly refuses a document Talos allows on control planes only
// (its ControlplaneOnlyConfig): what it configures runs there alone.
func (v *validator) controlPlaneOnly(path, kind string) {
	if !v.controlPlane() {
		v.errorf(path, "document kind %s is only allowed on control plane machines (machine.type controlplane or init): "+
			"what it configures runs on control planes only", kind)
	}
}

// requiredImage refuses an empty image, as Talos does for the components
// a document runs; the image itself is checked where it is folded.
func (v *validator) requiredImage(path, component string) {
	v.errorf(path, "%s image cannot be empty: write the image to run, e.g. %s", component, exampleImages[component])
}

var exampleImages = map[string]string{
	"kube-apiserver":          "registry.k8s.io/kube-apiserver:v1.34.12",
	"kube-controller-manager": "registry.k8s.io/kube-controller-manager:v1.34.12",
	"kube-scheduler":          "registry.k8s.io/kube-scheduler:v1.34.12",
	"kube-proxy":              "registry.k8s.io/kube-proxy:v1.34.12",
	"kubelet":                 "ghcr.io/siderolabs/kubelet:v1.34.12",
}

// podResources checks the resources of a pod a document configures and
// v1alpha1 has no field for: cpu and memory only (Talos's rule), each a
// quantity.
func (v *validator) podResources(path string, r *ResourcesConfig) {
	if r == nil {
		return
	}

	for _, part := range []struct {
		name   string
		values Unstructured
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, k := range sortedKeys(part.values) {
			kp := keyPath(path+"."+part.name, k)

			if k != "cpu" && k != "memory" {
				v.errorf(kp, "unsupported pod resource %q: only cpu and memory can be set", k)

				continue
			}

			if _, _, err := quantityOf(part.values[k]); err != nil {
				v.errorf(kp, "%v", err)
			}
		}
	}
}

// pemBlocks checks that s holds PEM blocks, all of type want (any type
// when want is ""), as Talos's AssertValidPEM.
func pemBlocks(s, want string) error {
	data := []byte(s)
	n := 0

	for {
		var b *pem.Block

		b, data = pem.Decode(data)
		if b == nil {
			break
		}

		if want != "" && b.Type != want {
			return fmt.Errorf("unexpected PEM block type %q, expected %q", b.Type, want)
		}

		n++
	}

	if n == 0 {
		return fmt.Errorf("no PEM blocks found: write the PEM text itself (-----BEGIN %s-----), not base64 of it", strings.TrimSpace(want+" ..."))
	}

	return nil
}

// issuingCA checks a CA a document issues certificates with: both parts,
// PEM (the pair itself is checked where it is folded).
func (v *validator) issuingCA(path string, ca *CertificateAndKey) {
	switch {
	case ca == nil:
	case ca.Cert == "":
		v.errorf(path+".cert", "issuing CA: certificate is required")
	case ca.Key == "":
		v.errorf(path+".key", "issuing CA: key is required")
	default:
		v.check(path+".cert", pemErr("issuing CA certificate", pemBlocks(ca.Cert, "CERTIFICATE")))
		v.check(path+".key", pemErr("issuing CA key", pemBlocks(ca.Key, "")))
	}
}

// acceptedPEMs checks a list of PEM certificates trusted besides the
// issuing CA.
func (v *validator) acceptedPEMs(path string, cas []string) {
	for i, ca := range cas {
		v.check(indexPath(path, i), pemErr(fmt.Sprintf("accepted CA #%d", i), pemBlocks(ca, "CERTIFICATE")))
	}
}

func pemErr(what string, err error) error {
	if err == nil {
		return nil
	}

	return fmt.Errorf("%s: %w", what, err)
}

// dns1123Subdomain is a Kubernetes object name (RFC 1123 subdomain).
var dns1123Subdomain = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
})

// objectName checks a name Talos requires to be a DNS-1123 subdomain.
func (v *validator) objectName(path, what, name string) {
	switch {
	case name == "":
		v.errorf(path, "%s name is required", what)
	case len(name) > 253 || !dns1123Subdomain().MatchString(name):
		v.errorf(path, "%s name %q is invalid: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "+
			"and must start and end with an alphanumeric character (e.g. 'example.com', at most 253 characters)", what, truncate(name, 40))
	}
}

// The sections of the effective config the Kubernetes documents fold
// into, made when missing.

func (f *folding) apiServer() *APIServerConfig {
	c := f.cluster()
	if c.APIServer == nil {
		c.APIServer = &APIServerConfig{}
	}

	return c.APIServer
}

func (f *folding) controlPlaneEndpoint() *ControlPlaneConfig {
	c := f.cluster()
	if c.ControlPlane == nil {
		c.ControlPlane = &ControlPlaneConfig{}
	}

	return c.ControlPlane
}

func (f *folding) clusterNetwork() *ClusterNetworkConfig {
	c := f.cluster()
	if c.Network == nil {
		c.Network = &ClusterNetworkConfig{}
	}

	return c.Network
}

func (f *folding) controllerManager() *ControllerManager {
	c := f.cluster()
	if c.ControllerManager == nil {
		c.ControllerManager = &ControllerManager{}
	}

	return c.ControllerManager
}

func (f *folding) scheduler() *SchedulerConfig {
	c := f.cluster()
	if c.Scheduler == nil {
		c.Scheduler = &SchedulerConfig{}
	}

	return c.Scheduler
}

func (f *folding) kubelet() *KubeletConfig {
	m := f.machine()
	if m.Kubelet == nil {
		m.Kubelet = &KubeletConfig{}
	}

	return m.Kubelet
}

func (f *folding) machineControlPlane() *MachineControlPlaneConfig {
	m := f.machine()
	if m.ControlPlane == nil {
		m.ControlPlane = &MachineControlPlaneConfig{}
	}

	return m.ControlPlane
}

// written is the v1alpha1 document's cluster section as written (never
// nil: empty when it had none).
func (f *folding) writtenCluster() *ClusterConfig {
	if f.written.Cluster == nil {
		return &ClusterConfig{}
	}

	return f.written.Cluster
}

func (f *folding) writtenMachine() *MachineConfig {
	if f.written.Machine == nil {
		return &MachineConfig{}
	}

	return f.written.Machine
}

// cloneResources copies a document's resources for the effective config.
func cloneResources(r *ResourcesConfig) *ResourcesConfig {
	if r == nil {
		return nil
	}

	return &ResourcesConfig{Requests: cloneUnstructured(r.Requests), Limits: cloneUnstructured(r.Limits)}
}

func cloneUnstructured(u Unstructured) Unstructured {
	if u == nil {
		return nil
	}

	return Unstructured(deepCopyAny(map[string]any(u)).(map[string]any)) //nolint:forcetypeassert // a map copies to a map
}

// deepCopyAny copies free-form YAML values, so the effective config never
// shares a map with the document it was folded from.
func deepCopyAny(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[k] = deepCopyAny(val)
		}

		return out
	case map[any]any:
		out := make(map[any]any, len(t))
		for k, val := range t {
			out[k] = deepCopyAny(val)
		}

		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = deepCopyAny(val)
		}

		return out
	default:
		return v
	}
}

// enabled is a document's enabled switch: on unless written false.
func enabled(b *bool) bool { return b == nil || *b }

func cloneStrings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}

	return maps.Clone(m)
}

func sortedStrings(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
