package configs

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Version is the only config version this package reads and writes.
const Version = "v1alpha1"

// Machine types, as written in machine.type.
const (
	MachineTypeInit         = "init"
	MachineTypeControlPlane = "controlplane"
	MachineTypeWorker       = "worker"
)

// Config is the v1alpha1 machine config: one YAML document.
type Config struct {
	Version string `yaml:"version"`
	// Debug sends kernel and service logs to the console.
	Debug bool `yaml:"debug"`
	// Persist keeps the config on the STATE partition across reboots; Talos
	// refuses configs without it, so it is always written out.
	Persist bool           `yaml:"persist"`
	Machine *MachineConfig `yaml:"machine,omitempty"`
	Cluster *ClusterConfig `yaml:"cluster,omitempty"`
}

// Encode writes the config as YAML with Talos's 4-space indentation.
func (c *Config) Encode() ([]byte, error) {
	return encodeIndented(quotedForEncoding(c))
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
