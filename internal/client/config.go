package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
)

// Reach is the connection to a node's API, with ctx (routed to the node
// by a fan-out) adjusted for it: an endpoint's apid proxies by the routing
// metadata, a maintenance-mode node is dialled directly without it.
type Reach func(ctx context.Context, node string) (context.Context, *Client)

// OnNode runs call against one node.
func OnNode[T any](ctx context.Context, reach Reach, node string, call func(ctx context.Context, c *Client) (T, error)) (T, error) {
	r := FanOut(ctx, []string{node}, func(ctx context.Context, node string) (T, error) {
		ctx, c := reach(ctx, node)
		return call(ctx, c)
	})[0]

	return r.Value, r.Err
}

// ApplyConfiguration sends req and returns the node's reply.
func (c *Client) ApplyConfiguration(ctx context.Context, req *machine.ApplyConfigurationRequest) (*machine.ApplyConfiguration, error) {
	resp, err := c.Machine.ApplyConfiguration(ctx, req)
	if err != nil {
		return nil, err
	}

	return FirstMessage(resp.GetMessages())
}

// ActiveConfigID names the MachineConfig in effect.
const ActiveConfigID = "v1alpha1"

// MachineConfig reads the node's config text through the resource
// API. Only os:admin sees it: for others the spec is redacted.
func (c *Client) MachineConfig(ctx context.Context) ([]byte, error) {
	resp, err := c.Resource.Get(ctx, &resource.GetRequest{Type: "machineconfig", Id: ActiveConfigID})
	if err != nil {
		return nil, fmt.Errorf("get machine config: %w", err)
	}

	if err := MetadataError(resp.GetMetadata()); err != nil {
		return nil, fmt.Errorf("get machine config: %w", err)
	}

	if resp.GetResource().GetRedacted() {
		return nil, errors.New("get machine config: the config is redacted for this client: the os:admin role is required")
	}

	return ConfigText(resp.GetResource().GetSpecYaml())
}

// ConfigText extracts the config document from a MachineConfig
// spec, which is either the config itself or the config wrapped in a
// `config:` key (as text or as a mapping).
func ConfigText(spec []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("machine config spec: %w", err)
	}

	if len(doc.Content) == 0 {
		return nil, errors.New("machine config spec is empty")
	}

	root := doc.Content[0]

	if root.Kind == yaml.ScalarNode {
		return []byte(root.Value), nil
	}

	if root.Kind != yaml.MappingNode || len(root.Content) != 2 || (root.Content[0].Value != "config" && root.Content[0].Value != "yaml") {
		return spec, nil
	}

	inner := root.Content[1]
	if inner.Kind == yaml.ScalarNode {
		return []byte(inner.Value), nil
	}

	var buf bytes.Buffer

	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)

	if err := enc.Encode(inner); err != nil {
		return nil, fmt.Errorf("machine config spec: %w", err)
	}

	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("machine config spec: %w", err)
	}

	return buf.Bytes(), nil
}
