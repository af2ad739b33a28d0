package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/etcd"
	"github.com/talosbox/talosbox/internal/resources/hardware"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// Resources is what the dashboard shows from the node's resources. A nil
// pointer or slice is a resource the node does not have (yet): a node
// without networkd has no network statuses, a worker no static pods.
type Resources struct {
	MachineStatus *runtime.MachineStatusSpec
	MachineType   string
	UUID          string
	SecureBoot    *bool
	// Members are the cluster members' IDs the node knows (discovery).
	Members []string

	Hostname     *network.HostnameStatusSpec
	Addresses    []netip.Prefix // NodeAddresses "current"
	Links        []Link
	LinkAddrs    []network.AddressStatusSpec
	Routes       []network.RouteStatusSpec
	Resolvers    *network.ResolverStatusSpec
	TimeServers  *network.TimeServerStatusSpec
	NetStatus    *network.NetworkStatusSpec
	KubeletImage string
	// StaticPods are the kubelet's static pods' statuses, by pod ID.
	StaticPods map[string]map[string]any
	EtcdMember string
}

// Link is a LinkStatuses resource: the link's name is its ID.
type Link struct {
	Name string
	network.LinkStatusSpec
}

// item is one decoded resource.
type item[T any] struct {
	ID   string
	Spec T
}

// listAs lists the resources of typ and decodes their specs. A type the
// node does not serve (an older node, or a sensitive type for a reader) is
// no resources rather than an error: the dashboard shows "n/a".
func listAs[T any](ctx context.Context, c *client.Client, typ string) ([]item[T], error) {
	res, err := c.ListResources(ctx, typ)
	if err != nil {
		switch status.Code(err) {
		case codes.NotFound, codes.PermissionDenied:
			return nil, nil
		}

		return nil, fmt.Errorf("%s: %w", typ, err)
	}

	return decodeAll[T](res)
}

// decodeAll decodes the specs of resources, leaving out those redacted
// for this caller: their masked values would read as real ones.
func decodeAll[T any](res []*resource.Resource) ([]item[T], error) {
	out := make([]item[T], 0, len(res))

	for _, r := range res {
		if r.GetRedacted() {
			continue
		}

		var spec T
		if err := yaml.Unmarshal(r.GetSpecYaml(), &spec); err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.GetMetadata().GetType(), r.GetMetadata().GetId(), err)
		}

		out = append(out, item[T]{ID: r.GetMetadata().GetId(), Spec: spec})
	}

	return out, nil
}

// byID is the spec of the resource named id, or nil.
func byID[T any](items []item[T], id string) *T {
	for i := range items {
		if items[i].ID == id {
			return &items[i].Spec
		}
	}

	return nil
}

func specs[T any](items []item[T]) []T {
	if items == nil {
		return nil
	}

	out := make([]T, len(items))
	for i := range items {
		out[i] = items[i].Spec
	}

	return out
}

// fetchResources lists every type the dashboard shows, in parallel (each
// list is a round trip through the endpoint).
func fetchResources(ctx context.Context, c *client.Client) (*Resources, error) {
	out := &Resources{}

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)

	// fetch runs one list; each fills its own field of out, so the
	// goroutines never write the same memory.
	fetch := func(run func() error) {
		wg.Go(func() {
			if err := run(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}

	fetch(func() error {
		items, err := listAs[runtime.MachineStatusSpec](ctx, c, runtime.MachineStatusType)
		out.MachineStatus = byID(items, "machine")

		return err
	})
	fetch(func() error {
		items, err := listAs[config.MachineTypeSpec](ctx, c, config.MachineTypeType)
		if s := byID(items, config.MachineTypeID); s != nil {
			out.MachineType = s.MachineType
		}

		return err
	})
	fetch(func() error {
		items, err := listAs[hardware.SystemInformationSpec](ctx, c, hardware.SystemInformationType)
		if s := byID(items, hardware.SystemInformationID); s != nil {
			out.UUID = s.UUID
		}

		return err
	})
	fetch(func() error {
		items, err := listAs[runtime.SecurityStateSpec](ctx, c, runtime.SecurityStateType)
		if s := byID(items, runtime.SecurityStateID); s != nil {
			out.SecureBoot = &s.SecureBoot
		}

		return err
	})
	fetch(func() error {
		items, err := listAs[cluster.MemberSpec](ctx, c, cluster.MemberType)
		for _, it := range items {
			out.Members = append(out.Members, it.ID)
		}

		return err
	})

	fetchNetwork(ctx, c, out, fetch)

	fetch(func() error {
		items, err := listAs[k8s.KubeletSpecSpec](ctx, c, k8s.KubeletSpecType)
		if len(items) > 0 {
			out.KubeletImage = items[0].Spec.Image
		}

		return err
	})
	fetch(func() error {
		items, err := listAs[k8s.StaticPodStatusSpec](ctx, c, k8s.StaticPodStatusType)
		for _, it := range items {
			if out.StaticPods == nil {
				out.StaticPods = map[string]map[string]any{}
			}

			out.StaticPods[it.ID] = it.Spec.PodStatus
		}

		return err
	})
	fetch(func() error {
		items, err := listAs[etcd.EtcdMemberSpec](ctx, c, etcd.EtcdMemberType)
		if s := byID(items, etcd.EtcdMemberID); s != nil {
			out.EtcdMember = s.MemberID
		}

		return err
	})

	wg.Wait()

	return out, errors.Join(errs...)
}

// fetchNetwork adds the network statuses networkd publishes.
func fetchNetwork(ctx context.Context, c *client.Client, out *Resources, fetch func(func() error)) {
	fetch(func() error {
		items, err := listAs[network.HostnameStatusSpec](ctx, c, network.HostnameStatusType)
		out.Hostname = byID(items, network.HostnameID)

		return err
	})
	fetch(func() error {
		items, err := listAs[network.NodeAddressSpec](ctx, c, network.NodeAddressType)
		if s := byID(items, network.NodeAddressesCur); s != nil {
			out.Addresses = s.Addresses
		}

		return err
	})
	fetch(func() error {
		items, err := listAs[network.LinkStatusSpec](ctx, c, network.LinkStatusType)
		for _, it := range items {
			out.Links = append(out.Links, Link{Name: it.ID, LinkStatusSpec: it.Spec})
		}

		return err
	})
	fetch(func() error {
		items, err := listAs[network.AddressStatusSpec](ctx, c, network.AddressStatusType)
		out.LinkAddrs = specs(items)

		return err
	})
	fetch(func() error {
		items, err := listAs[network.RouteStatusSpec](ctx, c, network.RouteStatusType)
		out.Routes = specs(items)

		return err
	})
	fetch(func() error {
		items, err := listAs[network.ResolverStatusSpec](ctx, c, network.ResolverStatusType)
		out.Resolvers = byID(items, network.ResolverID)

		return err
	})
	fetch(func() error {
		items, err := listAs[network.TimeServerStatusSpec](ctx, c, network.TimeServerStatusType)
		out.TimeServers = byID(items, network.TimeServerID)

		return err
	})
	fetch(func() error {
		items, err := listAs[network.NetworkStatusSpec](ctx, c, network.NetworkStatusType)
		out.NetStatus = byID(items, network.NetworkStatusID)

		return err
	})
}

// Gateways are the default routes' gateways, IPv4 first.
func (r *Resources) Gateways() []string {
	var v4, v6 []string

	for _, rt := range r.Routes {
		if !rt.Gateway.IsValid() || rt.Destination.Bits() > 0 {
			continue
		}

		if rt.Gateway.Is4() {
			v4 = append(v4, rt.Gateway.String())
		} else {
			v6 = append(v6, rt.Gateway.String())
		}
	}

	slices.Sort(v4)
	slices.Sort(v6)

	return slices.Compact(append(v4, v6...))
}

// KubernetesVersion is the kubelet image's tag, "" when there is none.
func (r *Resources) KubernetesVersion() string {
	ref := r.KubeletImage
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}

	// A tag follows the last ':' that comes after the last '/': a
	// registry's port is not a tag.
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || i < strings.LastIndexByte(ref, '/') {
		return ""
	}

	return ref[i+1:]
}

// StaticPodReady is whether the static pod whose ID contains name reports
// its Ready condition: "" when there is no such pod or condition.
func (r *Resources) StaticPodReady(name string) string {
	ids := make([]string, 0, len(r.StaticPods))
	for id := range r.StaticPods {
		if strings.Contains(id, name) {
			ids = append(ids, id)
		}
	}

	slices.Sort(ids)

	for _, id := range ids {
		conds, _ := r.StaticPods[id]["conditions"].([]any)

		for _, c := range conds {
			cond, _ := c.(map[string]any)
			if cond["type"] == "Ready" {
				return fmt.Sprint(cond["status"])
			}
		}
	}

	return ""
}
