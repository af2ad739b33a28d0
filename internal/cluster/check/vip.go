package check

import (
	"context"
	"errors"
	"fmt"
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

// SharedIP: every shared IP the control planes campaign for is held by
// exactly one of them. Without a shared IP in the config it is skipped,
// and says so.
func SharedIP(ctx context.Context, c *Cluster) error {
	list := func(typ string) []client.Result[[]*resource.Resource] {
		return FanOut(ctx, c, c.ControlPlanes, func(ctx context.Context, cl *client.Client) ([]*resource.Resource, error) {
			return cl.ListResources(ctx, typ)
		})
	}

	operators := list("OperatorSpecs")
	if err := NodeErrors(c, operators); err != nil {
		return err
	}

	vips := map[string]bool{}

	for _, r := range operators {
		for _, res := range r.Value {
			var spec vipSpec
			if yaml.Unmarshal(res.GetSpecYaml(), &spec) == nil && spec.Operator == "vip" && spec.VIP.IP != "" {
				vips[spec.VIP.IP] = true
			}
		}
	}

	if len(vips) == 0 {
		return Skip("no shared IP in the control planes' configs")
	}

	addresses := list("AddressStatuses")
	if err := NodeErrors(c, addresses); err != nil {
		return err
	}

	held := map[string][]string{}

	for _, r := range addresses {
		for _, res := range r.Value {
			var spec addressSpec
			if yaml.Unmarshal(res.GetSpecYaml(), &spec) != nil {
				continue
			}

			ip, _, _ := strings.Cut(spec.Address, "/")
			if name := c.name(r.Node); vips[ip] && !slices.Contains(held[ip], name) {
				held[ip] = append(held[ip], name)
			}
		}
	}

	var errs []string

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
