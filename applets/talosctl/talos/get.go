package talos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/applets/talosctl/output"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// Resource definitions and namespaces are listed from the Definitions
// call rather than stored as resources on the node, so talosctl presents
// them under the names Talos uses.
const (
	definitionType = "ResourceDefinitions.meta.talos.dev"
	namespaceType  = "Namespaces.meta.talos.dev"
	metaNamespace  = "meta"
)

var (
	definitionAliases = []string{"rd", "rds", "resourcedefinition", "resourcedefinitions", strings.ToLower(definitionType)}
	namespaceAliases  = []string{"ns", "namespace", "namespaces", strings.ToLower(namespaceType)}
)

type getOptions struct {
	output    string
	namespace string
	selector  string
	watch     bool
	insecure  bool
	redact    bool
}

func NewGetCommand(g *global.Args) *cobra.Command {
	var opts getOptions

	cmd := &cobra.Command{
		Use:     "get <type> [<id>]",
		Aliases: []string{"g"},
		Short:   "Get a specific resource or list of resources (use 'talosctl get rd' to see all available resource types).",
		Long: `Resource types are given by their full name, their short name or an alias:
'talosctl get rd' lists them. Tables show the type's print columns; -o yaml
and -o json show the whole resource, -o jsonpath='{.spec.field}' picks values.`,
		Example: `  talosctl -n 10.5.0.2 get services
  talosctl -n 10.5.0.2 get mc v1alpha1 -o yaml
  talosctl get machinestatus -o jsonpath='{.spec.stage}'
  talosctl get services -w`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := output.New(opts.output, cmd.OutOrStdout())
			if err != nil {
				return err
			}

			var id string
			if len(args) > 1 {
				id = args[1]
			}

			return g.WithSession(opts.insecure, func(s *global.Session) error {
				if opts.watch {
					return watchResources(cmd, s, w, args[0], id, opts)
				}

				return getResources(cmd, s, w, args[0], id, opts)
			})
		},
	}

	f := cmd.Flags()
	f.StringVarP(&opts.output, "output", "o", "table", "output mode (json, table, yaml, jsonpath=TEMPLATE)")
	f.StringVar(&opts.namespace, "namespace", "", "resource namespace (default is to use default namespace per resource)")
	f.StringVarP(&opts.selector, "selector", "l", "", "label selector to filter resources (k=v, k!=v, k, !k, k in (a,b))")
	f.BoolVarP(&opts.watch, "watch", "w", false, "watch resource changes")
	f.BoolVarP(&opts.insecure, "insecure", "i", false, "get resources using the insecure (encrypted with no auth) maintenance service")
	f.BoolVar(&opts.redact, "redact", false, "show sensitive resources with their secrets masked, as os:reader sees them (to share the output)")
	cmd.MarkFlagsMutuallyExclusive("redact", "watch")

	return cmd
}

// listing is one node's answer to get.
type listing struct {
	md    *common.Metadata
	def   *resource.ResourceDefinition
	items []*resource.Resource
}

func getResources(cmd *cobra.Command, s *global.Session, w output.Writer, typ, id string, opts getOptions) error {
	results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (listing, error) {
		return fetchResources(ctx, c, typ, id, opts)
	})

	headerDone := false

	for _, r := range results {
		if r.Err != nil {
			continue
		}

		if !headerDone {
			if err := w.Header(r.Value.def, false); err != nil {
				return err
			}

			headerDone = true
		}

		for _, item := range r.Value.items {
			if err := w.Resource(s.NodeName(r.Node, r.Value.md), item, resource.WatchResponse_CREATED); err != nil {
				return err
			}
		}
	}

	if err := w.Flush(); err != nil {
		return err
	}

	return global.ReportErrors(cmd, results)
}

func fetchResources(ctx context.Context, c *client.Client, typ, id string, opts getOptions) (listing, error) {
	lower := strings.ToLower(typ)

	if slices.Contains(definitionAliases, lower) {
		return definitionListing(ctx, c, id)
	}

	if slices.Contains(controlPlaneConfigAliases, lower) {
		return controlPlaneConfigListing(ctx, c, id, opts)
	}

	if id != "" {
		resp, err := c.Resource.Get(ctx, &resource.GetRequest{Namespace: opts.namespace, Type: typ, Id: id, Redact: opts.redact})
		if err != nil {
			return listing{}, err
		}

		return listing{md: resp.GetMetadata(), def: resp.GetDefinition(), items: []*resource.Resource{resp.GetResource()}}, client.MetadataError(resp.GetMetadata())
	}

	stream, err := c.Resource.List(ctx, &resource.ListRequest{Namespace: opts.namespace, Type: typ, LabelSelector: opts.selector, Redact: opts.redact})
	if err != nil {
		return listing{}, err
	}

	var l listing

	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			// A node whose resource API has no namespace type still has
			// namespaces: the ones its types live in.
			if status.Code(err) == codes.NotFound && slices.Contains(namespaceAliases, lower) && l.def == nil {
				return namespaceListing(ctx, c)
			}

			return listing{}, err
		}

		if err := client.MetadataError(msg.GetMetadata()); err != nil {
			return listing{}, err
		}

		l.md = msg.GetMetadata()

		if msg.GetDefinition() != nil && l.def == nil {
			l.def = msg.GetDefinition()
		}

		if msg.GetResource() != nil {
			l.items = append(l.items, msg.GetResource())
		}
	}

	if l.def == nil {
		l.def = &resource.ResourceDefinition{Type: typ}
	}

	return l, nil
}

// definitionSpec is a definition as `get rd -o yaml` shows it.
type definitionSpec struct {
	Type             string                  `yaml:"type"`
	DisplayType      string                  `yaml:"displayType"`
	DefaultNamespace string                  `yaml:"defaultNamespace"`
	Aliases          []string                `yaml:"aliases"`
	PrintColumns     []definitionPrintColumn `yaml:"printColumns"`
	Sensitivity      string                  `yaml:"sensitivity,omitempty"`
}

type definitionPrintColumn struct {
	Name     string `yaml:"name"`
	JSONPath string `yaml:"jsonPath"`
}

func definitionListing(ctx context.Context, c *client.Client, id string) (listing, error) {
	resp, err := c.Resource.Definitions(ctx, &emptypb.Empty{})
	if err != nil {
		return listing{}, err
	}

	if err := client.MetadataError(resp.GetMetadata()); err != nil {
		return listing{}, err
	}

	l := listing{md: resp.GetMetadata(), def: &resource.ResourceDefinition{
		Type: definitionType, DefaultNamespace: metaNamespace, Aliases: definitionAliases,
	}}

	defs := slices.Clone(resp.GetDefinitions())
	sort.Slice(defs, func(i, j int) bool { return strings.ToLower(defs[i].GetType()) < strings.ToLower(defs[j].GetType()) })

	for _, d := range defs {
		rid := strings.ToLower(d.GetType())
		if id != "" && !strings.EqualFold(id, rid) && !slices.Contains(d.GetAliases(), strings.ToLower(id)) {
			continue
		}

		spec := definitionSpec{
			Type: d.GetType(), DisplayType: output.DisplayType(d.GetType()), DefaultNamespace: d.GetDefaultNamespace(),
			Aliases: d.GetAliases(), PrintColumns: []definitionPrintColumn{},
		}
		if d.GetSensitive() {
			spec.Sensitivity = "sensitive"
		}

		for _, pc := range d.GetPrintColumns() {
			spec.PrintColumns = append(spec.PrintColumns, definitionPrintColumn{Name: pc.GetName(), JSONPath: pc.GetJsonPath()})
		}

		data, err := yaml.Marshal(spec)
		if err != nil {
			return listing{}, fmt.Errorf("definition %s: %w", d.GetType(), err)
		}

		l.items = append(l.items, &resource.Resource{
			Metadata: &resource.ResourceMetadata{Namespace: metaNamespace, Type: definitionType, Id: rid, Version: 1, Phase: "running"},
			SpecYaml: data,
		})
	}

	if id != "" && len(l.items) == 0 {
		return listing{}, fmt.Errorf("resource %s(%s/%s) doesn't exist", definitionType, metaNamespace, id)
	}

	return l, nil
}

func namespaceListing(ctx context.Context, c *client.Client) (listing, error) {
	resp, err := c.Resource.Definitions(ctx, &emptypb.Empty{})
	if err != nil {
		return listing{}, err
	}

	seen := map[string]bool{}

	for _, d := range resp.GetDefinitions() {
		seen[d.GetDefaultNamespace()] = true
	}

	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}

	sort.Strings(names)

	l := listing{md: resp.GetMetadata(), def: &resource.ResourceDefinition{Type: namespaceType, DefaultNamespace: metaNamespace, Aliases: namespaceAliases}}

	for _, n := range names {
		l.items = append(l.items, &resource.Resource{
			Metadata: &resource.ResourceMetadata{Namespace: metaNamespace, Type: namespaceType, Id: n, Version: 1, Phase: "running"},
			SpecYaml: []byte("description: \"\"\n"),
		})
	}

	return l, nil
}

// watchResources streams every node's events into one output. Rows from
// the initial listing are flushed together so they align; later events
// are flushed as they come.
func watchResources(cmd *cobra.Command, s *global.Session, w output.Writer, typ, id string, opts getOptions) error {
	var (
		mu         sync.Mutex
		headerDone bool
	)

	emit := func(node string, def *resource.ResourceDefinition, r *resource.Resource, ev resource.WatchResponse_EventType, flush bool) error {
		mu.Lock()
		defer mu.Unlock()

		if !headerDone && def != nil {
			if err := w.Header(def, true); err != nil {
				return err
			}

			headerDone = true
		}

		if r != nil {
			if err := w.Resource(node, r, ev); err != nil {
				return err
			}
		}

		if flush {
			return w.Flush()
		}

		return nil
	}

	results := global.FanOut(cmd.Context(), s, func(ctx context.Context, c *client.Client) (struct{}, error) {
		stream, err := c.Resource.Watch(ctx, &resource.WatchRequest{Namespace: opts.namespace, Type: typ, Id: id, LabelSelector: opts.selector})
		if err != nil {
			return struct{}{}, interrupted(ctx, err)
		}

		bootstrapped := false

		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) || (err != nil && ctx.Err() != nil) {
				return struct{}{}, nil
			}

			if err != nil {
				return struct{}{}, err
			}

			if msg.GetEventType() == resource.WatchResponse_ERRORED {
				return struct{}{}, fmt.Errorf("watch: %s", msg.GetError())
			}

			node := s.NodeName(global.NodeOf(ctx), msg.GetMetadata())

			if msg.GetEventType() == resource.WatchResponse_BOOTSTRAPPED {
				bootstrapped = true
			}

			if err := emit(node, msg.GetDefinition(), msg.GetResource(), msg.GetEventType(), bootstrapped); err != nil {
				return struct{}{}, err
			}
		}
	})

	return global.ReportErrors(cmd, results)
}

// controlPlaneConfigAliases name Talos 0.9's KubernetesControlPlaneConfigs
// (Talos 0.9's manual upgrade guide reads `get kcpc kube-apiserver -o yaml`).
// Today's Talos split it into one type per component; talosbox keeps
// those, and the old names read them, so the version the seed tells the
// user to wait for is the pod's talos.dev/config-version.
var controlPlaneConfigAliases = []string{"kcpc", "kubernetescontrolplaneconfig", "kubernetescontrolplaneconfigs",
	"kubernetescontrolplaneconfigs.config.talos.dev"}

var controlPlaneConfigTypes = map[string]string{
	k8s.APIServerID:         k8s.APIServerConfigType,
	k8s.ControllerManagerID: k8s.ControllerManagerConfigType,
	k8s.SchedulerID:         k8s.SchedulerConfigType,
}

func controlPlaneConfigListing(ctx context.Context, c *client.Client, id string, opts getOptions) (listing, error) {
	if id != "" {
		typ, ok := controlPlaneConfigTypes[id]
		if !ok {
			return listing{}, fmt.Errorf("no control plane config %q: want kube-apiserver, kube-controller-manager or kube-scheduler", id)
		}

		return fetchResources(ctx, c, typ, id, opts)
	}

	var all listing

	for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		l, err := fetchResources(ctx, c, controlPlaneConfigTypes[component], "", opts)
		if err != nil {
			return listing{}, err
		}

		all.md = cmp.Or(all.md, l.md)
		if all.def == nil {
			all.def = l.def
		}

		all.items = append(all.items, l.items...)
	}

	return all, nil
}
