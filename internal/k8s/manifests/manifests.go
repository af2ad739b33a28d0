// Package manifests renders the bootstrap manifests a talosbox control
// plane creates in its cluster (Talos's `Manifest` resources: the kubelet
// bootstrap token, CSR bindings, flannel, kube-proxy, CoreDNS and the
// in-cluster kubeconfig), parses user manifests (cluster.inlineManifests,
// cluster.extraManifests) and keeps the cluster in sync with them. Objects
// are apimachinery unstructured objects decoded from YAML templates, as
// Talos v1.8 did, so the node binary links no typed Kubernetes API
// packages.
//
// # Keeping manifests in sync (beyond Talos)
//
// Talos only creates the objects that are missing, so edits to the
// manifests never reach the cluster. Apply instead server-side applies
// every object, as field manager "talos" with force:
//
//   - An edit to a manifest rolls out; a field removed from it is removed
//     from the object unless another manager owns it too.
//   - talosbox owns the fields its manifests set, and force takes them
//     back from whoever changed them since: an edit made in the cluster
//     to such a field (kubectl edit of the CoreDNS Corefile, say) is
//     undone at the next apply, which is at every boot and every change
//     of the manifests. Fields only others set (a label added with
//     kubectl label, an extra ConfigMap key, replicas set by an
//     autoscaler when the manifest sets none) stay.
//   - Objects created by Talos's create-only path, or by an older
//     talosbox, are taken over the same way at their first apply.
//   - A Secret's stringData is applied as data, so that a key removed
//     from stringData goes (kubernetes/kubernetes#108008).
//
// Every object applied carries the label talos.dev/managed-by=talosbox
// and the annotation talos.dev/manifest=<manifest ID>, and is recorded in
// the inventory, the ConfigMap kube-system/talosbox-manifests (see
// inventory.go for why a ConfigMap). After each run, objects in the
// inventory that no manifest holds any more (a removed inline or extra
// manifest, a proxy or CoreDNS disabled, a renamed object) are:
//
//   - forgotten, when they no longer exist or no longer carry the label
//     (removing the label is how a user takes an object over);
//   - deleted ("pruned") with ApplyOptions.Prune (cluster.manifestsPrune),
//     but never Namespaces or CRDs, whose deletion takes down what others
//     put in them, and never after a run with errors or for a manifest
//     that failed to render (ApplyOptions.Hold): either may be a manifest
//     that is still wanted;
//   - otherwise kept and reported kept, as Talos keeps everything.
//
// Objects that talosbox did not apply are never in the inventory, so
// never pruned. The control planes share the inventory under the apply
// mutex; with pruning on they must agree on the manifests (they do when
// their cluster sections match), or each prunes what only the others
// hold.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/talosbox/talosbox/internal/k8s/manifests/templates"
)

// Options are the cluster settings the bootstrap manifests depend on, taken
// from the machine config (cluster.*); see templates.Options.
type Options = templates.Options

// Manifest is one named group of objects, applied in order.
type Manifest struct {
	ID      string
	Objects []*unstructured.Unstructured
}

// The IDs of the bootstrap manifests, as Talos names them; they sort in
// the order Talos applies them.
const (
	IDBootstrapToken      = templates.IDBootstrapToken
	IDCSRNodeBootstrap    = templates.IDCSRNodeBootstrap
	IDCSRApproverBinding  = templates.IDCSRApproverBinding
	IDCSRRenewalBinding   = templates.IDCSRRenewalBinding
	IDFlannel             = templates.IDFlannel
	IDKubeProxy           = templates.IDKubeProxy
	IDKubeconfigInCluster = templates.IDKubeconfigInCluster
	IDTalosNodeRBAC       = templates.IDTalosNodeRBAC
	IDCoreDNS             = templates.IDCoreDNS
	IDCoreDNSService      = templates.IDCoreDNSService
	inlinePriority        = "99-"
)

// Render builds the bootstrap manifests for o, sorted by ID. Components
// that are disabled are left out; the CSR bindings, the token, the
// in-cluster kubeconfig and the kube-dns Service are always there, as in
// Talos.
func Render(o Options) ([]Manifest, error) {
	texts, err := templates.Render(o)
	if err != nil {
		return nil, err
	}

	out := make([]Manifest, 0, len(texts))

	for _, t := range texts {
		m, err := Parse(t.ID, t.YAML)
		if err != nil {
			// A template that renders bad YAML is our bug, not the
			// user's; say which one so it is found quickly.
			return nil, fmt.Errorf("bootstrap manifest template: %w", err)
		}

		out = append(out, m)
	}

	return out, nil
}

// Inline parses one cluster.inlineManifests entry; its ID is "99-<name>".
func Inline(name, contents string) (Manifest, error) {
	if name == "" {
		return Manifest{}, errors.New("cluster.inlineManifests: a manifest has no name")
	}

	m, err := decode([]byte(contents))
	if err != nil {
		return Manifest{}, fmt.Errorf("cluster.inlineManifests %q: %w", name, err)
	}

	return Manifest{ID: inlinePriority + name, Objects: m}, nil
}

// Parse decodes a multi-document YAML (or JSON) manifest, such as a
// downloaded cluster.extraManifests URL (ID "99-<url>"). Empty documents
// are skipped; List kinds are expanded into their items.
func Parse(id string, data []byte) (Manifest, error) {
	objs, err := decode(data)
	if err != nil {
		return Manifest{}, fmt.Errorf("manifest %q: %w", id, err)
	}

	return Manifest{ID: id, Objects: objs}, nil
}

// decode splits data at "---" lines and decodes each document; errors say
// which document (counted from 1, as an editor would) failed.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))

	var objs []*unstructured.Unstructured

	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}

		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}

		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}

		js = bytes.TrimSpace(js)
		if len(js) == 0 || string(js) == "null" {
			continue // only comments or whitespace
		}

		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}

		if obj.GetAPIVersion() == "" {
			return nil, fmt.Errorf("document %d: %s %q has no apiVersion", doc, obj.GetKind(), obj.GetName())
		}

		if !obj.IsList() {
			objs = append(objs, obj)

			continue
		}

		list, err := obj.ToList()
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}

		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
	}
}

// YAML is the manifest as a multi-document YAML stream, what `talosctl get
// manifests -o yaml` shows of its objects.
func (m Manifest) YAML() ([]byte, error) {
	var buf bytes.Buffer

	for i, obj := range m.Objects {
		js, err := obj.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("manifest %q: object %d: %w", m.ID, i+1, err)
		}

		y, err := yaml.JSONToYAML(js)
		if err != nil {
			return nil, fmt.Errorf("manifest %q: object %d: %w", m.ID, i+1, err)
		}

		if i > 0 {
			buf.WriteString("---\n")
		}

		buf.Write(y)
	}

	return buf.Bytes(), nil
}
