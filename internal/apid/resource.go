package apid

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
)

// resourceServer is ResourceService: the node's bus, read-only.
type resourceServer struct {
	resource.UnimplementedResourceServiceServer

	s *Server
}

// definition resolves what the user typed through the registry, and
// enforces the maintenance-mode type allow-list.
func (r *resourceServer) definition(ctx context.Context, typ string) (bus.Definition, error) {
	reg := r.s.node.Registry()

	def, err := reg.Lookup(typ)
	switch {
	case errors.Is(err, bus.ErrAmbiguousType):
		return bus.Definition{}, status.Error(codes.InvalidArgument, err.Error())
	case err != nil:
		return bus.Definition{}, status.Error(codes.NotFound, err.Error())
	}

	if c := callerFrom(ctx); c != nil && c.maintenance && !maintenanceReadable(def) {
		return bus.Definition{}, maintenanceDenied(def.Type)
	}

	return def, nil
}

func namespaceOr(ns string, def bus.Definition) string {
	if ns == "" {
		return def.DefaultNamespace
	}

	return ns
}

func busError(err error) error {
	switch {
	case bus.IsNotFound(err):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, bus.ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}

	return status.Error(codes.Internal, err.Error())
}

// Get returns one resource, its spec redacted for non-admins when the
// type is sensitive.
func (r *resourceServer) Get(ctx context.Context, req *resource.GetRequest) (*resource.GetResponse, error) {
	if req.GetRedact() {
		ctx = context.WithValue(ctx, redactKey{}, true)
	}

	def, err := r.definition(ctx, req.GetType())
	if err != nil {
		return nil, err
	}

	if req.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "get: an id is required (List returns all)")
	}

	res, err := r.s.node.Store().Get(ctx, bus.Pointer{Namespace: namespaceOr(req.GetNamespace(), def), Type: def.Type, ID: req.GetId()})
	if err != nil {
		return nil, busError(err)
	}

	out, err := toProto(ctx, def, res)
	if err != nil {
		return nil, err
	}

	return &resource.GetResponse{Resource: out, Definition: definitionProto(def)}, nil
}

func labelQuery(sel string) (*bus.LabelQuery, error) {
	if sel == "" {
		return nil, nil
	}

	q, err := bus.ParseLabelQuery(sel)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "label selector %q: %v", sel, err)
	}

	return &q, nil
}

// selection resolves what List and Watch were asked for: the type's
// definition, the namespace (the type's default when empty) and the label
// query (nil when none).
func (r *resourceServer) selection(ctx context.Context, typ, namespace, selector string) (bus.Definition, string, *bus.LabelQuery, error) {
	def, err := r.definition(ctx, typ)
	if err != nil {
		return bus.Definition{}, "", nil, err
	}

	q, err := labelQuery(selector)
	if err != nil {
		return bus.Definition{}, "", nil, err
	}

	return def, namespaceOr(namespace, def), q, nil
}

// List streams the resources of a kind; the first message carries the
// definition (for table columns).
func (r *resourceServer) List(req *resource.ListRequest, srv grpc.ServerStreamingServer[resource.ListResponse]) error {
	ctx := srv.Context()
	if req.GetRedact() {
		ctx = context.WithValue(ctx, redactKey{}, true)
	}

	def, ns, q, err := r.selection(ctx, req.GetType(), req.GetNamespace(), req.GetLabelSelector())
	if err != nil {
		return err
	}

	var opts []bus.ListOption
	if q != nil {
		opts = append(opts, bus.WithLabelQuery(*q))
	}

	items, err := r.s.node.Store().List(ctx, bus.Kind{Namespace: ns, Type: def.Type}, opts...)
	if err != nil {
		return busError(err)
	}

	if len(items) == 0 {
		// Still say what the type is, so a client can print headers.
		return srv.Send(&resource.ListResponse{Definition: definitionProto(def)})
	}

	for i, res := range items {
		out, err := toProto(ctx, def, res)
		if err != nil {
			return err
		}

		msg := &resource.ListResponse{Resource: out}
		if i == 0 {
			msg.Definition = definitionProto(def)
		}

		if err := srv.Send(msg); err != nil {
			return err
		}
	}

	return nil
}

var watchTypes = map[bus.EventType]resource.WatchResponse_EventType{
	bus.Created:      resource.WatchResponse_CREATED,
	bus.Updated:      resource.WatchResponse_UPDATED,
	bus.Destroyed:    resource.WatchResponse_DESTROYED,
	bus.Bootstrapped: resource.WatchResponse_BOOTSTRAPPED,
	bus.Errored:      resource.WatchResponse_ERRORED,
}

// Watch streams the current resources, BOOTSTRAPPED, then every change
// until the call ends. A client too slow for the bus's bounded queue gets
// an ERRORED event and the stream ends with Aborted: it should watch anew.
func (r *resourceServer) Watch(req *resource.WatchRequest, srv grpc.ServerStreamingServer[resource.WatchResponse]) error {
	ctx := srv.Context()

	def, ns, q, err := r.selection(ctx, req.GetType(), req.GetNamespace(), req.GetLabelSelector())
	if err != nil {
		return err
	}

	var opts []bus.WatchOption
	if q != nil {
		opts = append(opts, bus.WithWatchLabelQuery(*q))
	}

	var w *bus.Watcher
	if req.GetId() == "" {
		w, err = r.s.node.Store().WatchKind(ctx, bus.Kind{Namespace: ns, Type: def.Type}, opts...)
	} else {
		w, err = r.s.node.Store().Watch(ctx, bus.Pointer{Namespace: ns, Type: def.Type, ID: req.GetId()}, opts...)
	}

	if err != nil {
		return busError(err)
	}
	defer w.Close()

	first := true

	for ev := range w.Events() {
		msg := &resource.WatchResponse{EventType: watchTypes[ev.Type]}

		if first {
			msg.Definition = definitionProto(def)
			first = false
		}

		if ev.Resource != nil {
			if msg.Resource, err = toProto(ctx, def, ev.Resource); err != nil {
				return err
			}
		}

		if ev.Type == bus.Errored {
			msg.Error = ev.Err.Error()
			srv.Send(msg) //nolint:errcheck // the stream fails below anyway

			return status.Errorf(codes.Aborted, "watch %s: %v", def.Type, ev.Err)
		}

		if err := srv.Send(msg); err != nil {
			return err
		}
	}

	// The watch ends when the call does.
	return status.FromContextError(ctx.Err()).Err()
}

// Definitions lists every registered resource type.
func (r *resourceServer) Definitions(ctx context.Context, _ *emptypb.Empty) (*resource.DefinitionsResponse, error) {
	all := r.s.node.Registry().All()

	out := &resource.DefinitionsResponse{Definitions: make([]*resource.ResourceDefinition, 0, len(all))}

	for _, d := range all {
		out.Definitions = append(out.Definitions, definitionProto(d))
	}

	return out, nil
}

func definitionProto(d bus.Definition) *resource.ResourceDefinition {
	out := &resource.ResourceDefinition{
		Type:             d.Type,
		DefaultNamespace: d.DefaultNamespace,
		Aliases:          d.Aliases,
		Sensitive:        d.Sensitive,
	}

	for _, c := range d.PrintColumns {
		out.PrintColumns = append(out.PrintColumns, &resource.PrintColumn{Name: c.Name, JsonPath: c.JSONPath})
	}

	return out
}

// redactKey marks a request that asked to see sensitive specs redacted
// even though its caller could see them whole.
type redactKey struct{}

// toProto renders a resource; sensitive specs only reach admins whole,
// others get them redacted.
func toProto(ctx context.Context, def bus.Definition, res bus.Resource) (*resource.Resource, error) {
	md := res.Metadata()

	out := &resource.Resource{Metadata: &resource.ResourceMetadata{
		Namespace:  md.Namespace,
		Type:       md.Type,
		Id:         md.ID,
		Version:    md.Version,
		Owner:      md.Owner,
		Phase:      md.Phase.String(),
		Labels:     md.Labels.Map(),
		Finalizers: md.Finalizers.List(),
	}}

	if !md.Created.IsZero() {
		out.Metadata.Created = timestamppb.New(md.Created)
	}

	if !md.Updated.IsZero() {
		out.Metadata.Updated = timestamppb.New(md.Updated)
	}

	var (
		spec []byte
		err  error
	)

	switch r, ok := res.Spec().(redactor); {
	case !def.Sensitive || callerFrom(ctx).admin() && ctx.Value(redactKey{}) == nil:
		spec, err = specYAML(res.Spec())
	case ok:
		// Still marked redacted, so a client never takes the masked
		// values for real ones (edit and patch refuse it).
		out.Redacted = true
		spec, err = r.RedactedYAML()
	default:
		out.Redacted = true
		return out, nil
	}

	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode %s %s: %v", md.Type, md.ID, err)
	}

	out.SpecYaml = spec

	return out, nil
}

// redactor is a sensitive spec that can show itself with its secrets
// masked and its structure kept; callers without os:admin get that
// rather than no spec at all.
type redactor interface {
	RedactedYAML() ([]byte, error)
}

// specYAML encodes a spec. The machine config is shown as applied (its
// text), which is what users wrote and what `talosctl get mc` prints.
func specYAML(spec any) ([]byte, error) {
	if mc, ok := spec.(*config.MachineConfigSpec); ok {
		return []byte(mc.YAML), nil
	}

	return yaml.Marshal(spec)
}
