package talosctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
)

// vipSpec is the part of a vip OperatorSpec the check reads.
type vipSpec struct {
	Operator string `yaml:"operator"`
	VIP      struct {
		IP string `yaml:"ip"`
	} `yaml:"vip"`
}

// addressSpec is the part of an AddressStatus the check reads.
type addressSpec struct {
	Address string `yaml:"address"`
}

// checkVIP: every shared IP the control planes campaign for is held by
// exactly one of them. Without a shared IP in the config it is skipped,
// and says so.
func checkVIP(ctx context.Context, s *session) error {
	cp := s.on(s.controlPlanes)

	vips := map[string]bool{}
	held := map[string][]string{}

	var errs []string

	for _, r := range fanOut(ctx, cp, func(ctx context.Context, c *client.Client) ([]*resource.Resource, error) {
		return listResources(ctx, c, "OperatorSpecs")
	}) {
		if r.Err != nil {
			errs = append(errs, fmt.Sprintf("%s: %s", cp.nodeName(r.Node, nil), client.Message(r.Err)))
			continue
		}

		for _, res := range r.Value {
			var spec vipSpec
			if yaml.Unmarshal(res.GetSpecYaml(), &spec) == nil && spec.Operator == "vip" && spec.VIP.IP != "" {
				vips[spec.VIP.IP] = true
			}
		}
	}

	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}

	if len(vips) == 0 {
		return skip("no shared IP in the control planes' configs")
	}

	for _, r := range fanOut(ctx, cp, func(ctx context.Context, c *client.Client) ([]*resource.Resource, error) {
		return listResources(ctx, c, "AddressStatuses")
	}) {
		if r.Err != nil {
			errs = append(errs, fmt.Sprintf("%s: %s", cp.nodeName(r.Node, nil), client.Message(r.Err)))
			continue
		}

		for _, res := range r.Value {
			var spec addressSpec
			if yaml.Unmarshal(res.GetSpecYaml(), &spec) != nil {
				continue
			}

			ip, _, _ := strings.Cut(spec.Address, "/")
			if name := cp.nodeName(r.Node, nil); vips[ip] && !slices.Contains(held[ip], name) {
				held[ip] = append(held[ip], name)
			}
		}
	}

	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}

	for _, ip := range slices.Sorted(maps.Keys(vips)) {
		switch owners := held[ip]; len(owners) {
		case 1:
		case 0:
			errs = append(errs, fmt.Sprintf("shared IP %s is held by no node", ip))
		default:
			errs = append(errs, fmt.Sprintf("shared IP %s is held by %d nodes: %s", ip, len(owners), strings.Join(owners, ", ")))
		}
	}

	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}

	return nil
}

// listResources lists one type's resources in its default namespace.
func listResources(ctx context.Context, c *client.Client, typ string) ([]*resource.Resource, error) {
	stream, err := c.Resource.List(ctx, &resource.ListRequest{Type: typ})
	if err != nil {
		return nil, err
	}

	var out []*resource.Resource

	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}

		if err != nil {
			return nil, err
		}

		if err := client.MetadataError(msg.GetMetadata()); err != nil {
			return nil, err
		}

		if msg.GetResource() != nil {
			out = append(out, msg.GetResource())
		}
	}
}
