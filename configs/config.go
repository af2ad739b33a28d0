package configs

import (
	"bytes"
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/deepcopy"
)

// Version is the only config version this package reads and writes.
const Version = "v1alpha1"

// Machine types, as written in machine.type.
const (
	MachineTypeInit         = "init"
	MachineTypeControlPlane = "controlplane"
	MachineTypeWorker       = "worker"
)

// Config is a machine config. Its fields are the v1alpha1 document in
// effect: as written, with the typed documents that stand for v1alpha1
// fields folded in (see Document). Documents holds the typed documents as
// written. A Config is not changed once decoded: it is shared by every
// reader of the bus.
type Config struct {
	Version string `yaml:"version"`
	// Debug sends kernel and service logs to the console.
	Debug bool `yaml:"debug"`
	// Persist keeps the config on the STATE partition across reboots; Talos
	// refuses configs without it, so it is always written out.
	Persist bool           `yaml:"persist"`
	Machine *MachineConfig `yaml:"machine,omitempty"`
	Cluster *ClusterConfig `yaml:"cluster,omitempty"`

	// Documents are the typed documents, in the order written.
	Documents []Document `yaml:"-"`

	// written is the v1alpha1 document as written when documents were
	// folded into the fields above (nil when the fields are what was
	// written).
	written *Config
	// withoutV1Alpha1: the config had no v1alpha1 document, only typed
	// ones.
	withoutV1Alpha1 bool
	// aliases and foldProblems are what folding found (folding).
	aliases      []alias
	foldProblems []*ValidationError
	// folded fingerprints the effective fields as folded (checkUnchanged).
	folded [32]byte
}

// copyConfig deep-copies src into dst.
func copyConfig(dst, src *Config) {
	deepcopy.Value(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem(), nil)
}

// hasV1Alpha1 reports whether the config has a v1alpha1 document to
// write: a decoded config that had one, or a config built in code with
// any of its fields set.
func (c *Config) hasV1Alpha1() bool {
	if c.withoutV1Alpha1 {
		return false
	}

	return c.written != nil || c.Version != "" || c.Machine != nil || c.Cluster != nil || len(c.Documents) == 0
}

// V1Alpha1 is the v1alpha1 document as written (nil when the config has
// none): what Encode writes first, and what a v1alpha1 JSON patch
// addresses.
func (c *Config) V1Alpha1() *Config {
	switch {
	case c == nil || !c.hasV1Alpha1():
		return nil
	case c.written != nil:
		return c.written
	default:
		return c
	}
}

// Encode writes the config as written, as YAML with Talos's 4-space
// indentation: the v1alpha1 document, then each typed document, separated
// by "---".
func (c *Config) Encode() ([]byte, error) {
	if err := c.checkUnchanged(); err != nil {
		return nil, err
	}

	var out []byte

	if v1 := c.V1Alpha1(); v1 != nil {
		b, err := encodeIndented(quotedForEncoding(v1))
		if err != nil {
			return nil, err
		}

		out = b
	}

	for _, doc := range c.Documents {
		n, err := documentNode(doc)
		if err != nil {
			return nil, err
		}

		b, err := encodeIndented(n)
		if err != nil {
			return nil, err
		}

		if len(out) > 0 {
			out = append(out, "---\n"...)
		}

		out = append(out, b...)
	}

	return out, nil
}

// documentNode is a typed document as YAML: its header (apiVersion,
// kind), then its fields.
func documentNode(doc Document) (*yaml.Node, error) {
	var body yaml.Node
	if err := body.Encode(quotedForEncoding(doc)); err != nil {
		return nil, fmt.Errorf("error encoding %s: %w", doc.Kind(), err)
	}

	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: strTag, Value: "apiVersion"}, {Kind: yaml.ScalarNode, Tag: strTag, Value: DocumentAPIVersion},
		{Kind: yaml.ScalarNode, Tag: strTag, Value: "kind"}, {Kind: yaml.ScalarNode, Tag: strTag, Value: doc.Kind()},
	}}

	if body.Kind == yaml.MappingNode {
		n.Content = append(n.Content, body.Content...)
	}

	return n, nil
}

// encodeIndented writes v (a config or its node tree) as Encode does.
func encodeIndented(v any) ([]byte, error) {
	var buf bytes.Buffer

	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)

	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("error encoding config: %w", err)
	}

	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("error encoding config: %w", err)
	}

	return buf.Bytes(), nil
}

// DefaultLocalAPIServerPort is where a control plane's API server listens
// when cluster.controlPlane.localAPIServerPort is not set.
const DefaultLocalAPIServerPort = 6443

// LocalAPIServerPort is cluster.controlPlane.localAPIServerPort, or its
// default.
func (c *Config) LocalAPIServerPort() int {
	if c != nil && c.Cluster != nil && c.Cluster.ControlPlane != nil && c.Cluster.ControlPlane.LocalAPIServerPort != 0 {
		return c.Cluster.ControlPlane.LocalAPIServerPort
	}

	return DefaultLocalAPIServerPort
}

// IsControlPlane reports whether the machine runs the control plane
// (init is the legacy name of a bootstrapping control-plane node).
func (c *Config) IsControlPlane() bool {
	if c == nil || c.Machine == nil {
		return false
	}

	return c.Machine.Type == MachineTypeControlPlane || c.Machine.Type == MachineTypeInit
}
