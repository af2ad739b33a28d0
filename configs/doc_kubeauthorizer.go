package configs

import "slices"

// KubeAuthorizerConfig is Talos's KubeAuthorizerConfig: one authorizer of
// the API server's authorization chain (Node, RBAC or a webhook), named.
// v1alpha1 has no field for it: the node writes the chain, in the order
// the documents are written, as the API server's
// authorization-config.yaml. With a KubeAPIServerConfig the chain is the
// documents' alone; with the v1alpha1 API server Node and RBAC are added
// first when the documents lack them, as Talos does.
type KubeAuthorizerConfig struct {
	Name string `yaml:"name"`
	// Type is Node, RBAC or Webhook.
	Type    string       `yaml:"type"`
	Webhook Unstructured `yaml:"webhook,omitempty"`
}

// Kind implements Document.
func (*KubeAuthorizerConfig) Kind() string { return "KubeAuthorizerConfig" }

// DocumentName implements NamedDocument.
func (k *KubeAuthorizerConfig) DocumentName() string { return k.Name }

var authorizerTypes = []string{"Node", "RBAC", "Webhook"}

func (k *KubeAuthorizerConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	if k.Name == "" {
		v.errorf(path+".name", "authorizer name is required")
	}

	switch {
	case k.Type == "":
		v.errorf(path+".type", "authorizer type is required: Node, RBAC or Webhook")
	case !slices.Contains(authorizerTypes, k.Type):
		v.errorf(path+".type", "authorizer type %s is not allowed, allowed types are [Node RBAC Webhook]", k.Type)
	case k.Type == "Webhook" && len(k.Webhook) == 0:
		v.errorf(path+".webhook", "authorizer webhook configuration is required for Webhook authorizer type")
	case k.Type != "Webhook" && len(k.Webhook) > 0:
		v.warnf(path+".webhook", "authorizer webhook configuration is not allowed non-Webhook authorizer types")
	}

	// kube-apiserver refuses a chain with Node or RBAC twice.
	if k.Type == "Node" || k.Type == "RBAC" {
		for _, other := range DocumentsOf[*KubeAuthorizerConfig](v.cfg) {
			if other == k {
				break
			}

			if other.Type == k.Type {
				v.errorf(path+".type", "authorizer type %s is already used by KubeAuthorizerConfig %q: the API server allows it once", k.Type, other.Name)
			}
		}
	}
}

// fold: nothing in v1alpha1 holds it.
func (k *KubeAuthorizerConfig) fold(*folding) {}

// Authorizer is one authorizer of the API server's chain.
type Authorizer struct {
	Type, Name string
	Webhook    map[string]any
}

// Authorizers is the API server's authorization chain: the
// KubeAuthorizerConfig documents in order, Node and RBAC first when they
// lack them and the API server is v1alpha1's (Talos's legacy path); Node
// then RBAC without documents.
func Authorizers(c *Config) []Authorizer {
	var out []Authorizer

	for _, d := range DocumentsOf[*KubeAuthorizerConfig](c) {
		out = append(out, Authorizer{Type: d.Type, Name: d.Name, Webhook: map[string]any(cloneUnstructured(d.Webhook))})
	}

	if DocumentOf[*KubeAPIServerConfig](c) != nil && len(out) > 0 {
		return out
	}

	has := func(t string) bool { return slices.ContainsFunc(out, func(a Authorizer) bool { return a.Type == t }) }

	if !has("Node") {
		out = slices.Insert(out, 0, Authorizer{Type: "Node", Name: "node"})
	}

	if !has("RBAC") {
		out = slices.Insert(out, 1, Authorizer{Type: "RBAC", Name: "rbac"})
	}

	return out
}
