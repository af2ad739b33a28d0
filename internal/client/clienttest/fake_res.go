package clienttest

import (
	"archive/tar"
	"bytes"
	"context"
	"path"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
)

// definition finds a type by full name, plural short name or alias, as
// the bus registry does.
// resources is the ResourceService half of the fake: its List would clash
// with MachineService.List on one type.
type resources struct {
	resource.UnimplementedResourceServiceServer

	*Server
}

func (n *Node) definition(typ string) (*resource.ResourceDefinition, error) {
	for _, d := range n.Definitions {
		short, _, _ := strings.Cut(d.GetType(), ".")
		if strings.EqualFold(d.GetType(), typ) || strings.EqualFold(short, typ) {
			return d, nil
		}

		for _, a := range d.GetAliases() {
			if strings.EqualFold(a, typ) {
				return d, nil
			}
		}
	}

	return nil, status.Errorf(codes.NotFound, "resource type %q not found", typ)
}

func (n *Node) matching(def *resource.ResourceDefinition, ns, id string) []*resource.Resource {
	if ns == "" {
		ns = def.GetDefaultNamespace()
	}

	var out []*resource.Resource

	for _, r := range n.Resources {
		m := r.GetMetadata()
		if m.GetType() == def.GetType() && m.GetNamespace() == ns && (id == "" || m.GetId() == id) {
			out = append(out, r)
		}
	}

	return out
}

func (r resources) Get(ctx context.Context, req *resource.GetRequest) (*resource.GetResponse, error) {
	n, err := r.node(ctx)
	if err != nil {
		return nil, err
	}

	def, err := n.definition(req.GetType())
	if err != nil {
		return nil, err
	}

	var rs []*resource.Resource

	r.Locked(func() { rs = n.matching(def, req.GetNamespace(), req.GetId()) })

	if len(rs) == 0 {
		return nil, status.Errorf(codes.NotFound, "resource %s(%s/%s) doesn't exist", def.GetType(), req.GetNamespace(), req.GetId())
	}

	return &resource.GetResponse{Metadata: md(n), Resource: rs[0], Definition: def}, nil
}

func (r resources) List(req *resource.ListRequest, stream grpc.ServerStreamingServer[resource.ListResponse]) error {
	n, err := r.node(stream.Context())
	if err != nil {
		return err
	}

	def, err := n.definition(req.GetType())
	if err != nil {
		return err
	}

	first := true

	var rs []*resource.Resource

	r.Locked(func() { rs = n.matching(def, req.GetNamespace(), "") })

	for _, res := range rs {
		if !labelsMatch(res.GetMetadata().GetLabels(), req.GetLabelSelector()) {
			continue
		}

		msg := &resource.ListResponse{Metadata: md(n), Resource: res}
		if first {
			msg.Definition = def
			first = false
		}

		if err := stream.Send(msg); err != nil {
			return err
		}
	}

	if first { // nothing sent: still tell the client the definition
		return stream.Send(&resource.ListResponse{Metadata: md(n), Definition: def})
	}

	return nil
}

// labelsMatch understands "k=v" and "k" terms, enough for the CLI tests.
func labelsMatch(labels map[string]string, sel string) bool {
	for term := range strings.SplitSeq(sel, ",") {
		if term = strings.TrimSpace(term); term == "" {
			continue
		}

		k, v, hasValue := strings.Cut(term, "=")

		got, ok := labels[k]
		if !ok || (hasValue && got != v) {
			return false
		}
	}

	return true
}

func (r resources) Watch(req *resource.WatchRequest, stream grpc.ServerStreamingServer[resource.WatchResponse]) error {
	n, err := r.node(stream.Context())
	if err != nil {
		return err
	}

	def, err := n.definition(req.GetType())
	if err != nil {
		return err
	}

	first := def

	var rs []*resource.Resource

	r.Locked(func() { rs = n.matching(def, req.GetNamespace(), req.GetId()) })

	for _, res := range rs {
		if err := stream.Send(&resource.WatchResponse{Metadata: md(n), EventType: resource.WatchResponse_CREATED, Resource: res, Definition: first}); err != nil {
			return err
		}

		first = nil
	}

	if err := stream.Send(&resource.WatchResponse{Metadata: md(n), EventType: resource.WatchResponse_BOOTSTRAPPED, Definition: first}); err != nil {
		return err
	}

	for _, e := range n.WatchEvents {
		e.Metadata = md(n)
		if err := stream.Send(e); err != nil {
			return err
		}
	}

	return nil
}

func (r resources) Definitions(ctx context.Context, _ *emptypb.Empty) (*resource.DefinitionsResponse, error) {
	n, err := r.node(ctx)
	if err != nil {
		return nil, err
	}

	return &resource.DefinitionsResponse{Metadata: md(n), Definitions: n.Definitions}, nil
}

// entries lists the files and implied directories under root, sorted.
func (n *Node) entries(root string) []string {
	set := map[string]bool{}

	for p := range n.Files {
		if p != root && !strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/") {
			continue
		}

		for d := p; d != root && d != "/" && d != "."; d = path.Dir(d) {
			set[d] = true
		}
	}

	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}

	sort.Strings(out)

	return out
}

func (n *Node) isDir(p string) bool {
	_, isFile := n.Files[p]
	return !isFile
}

func (s *Server) List(req *machine.ListRequest, stream grpc.ServerStreamingServer[machine.FileInfo]) error {
	n, err := s.node(stream.Context())
	if err != nil {
		return err
	}

	root := path.Clean(req.GetRoot())
	entries := n.entries(root)

	if _, isFile := n.Files[root]; !isFile && len(entries) == 0 {
		return status.Errorf(codes.NotFound, "lstat %s: no such file or directory", root)
	}

	send := func(p string) error {
		rel, _ := strings.CutPrefix(strings.TrimPrefix(p, root), "/")
		if rel == "" {
			rel = "."
		}

		fi := &machine.FileInfo{Metadata: md(n), Name: p, RelativeName: rel, IsDir: n.isDir(p), Modified: 1700000000}
		if fi.IsDir {
			fi.Mode = 0o20000000755 // os.ModeDir | 0755
		} else {
			fi.Mode, fi.Size = 0o644, int64(len(n.Files[p]))
		}

		return stream.Send(fi)
	}

	if err := send(root); err != nil {
		return err
	}

	maxDepth := 1
	if req.GetRecurse() {
		maxDepth = int(req.GetRecursionDepth())
	}

	for _, p := range entries {
		depth := strings.Count(strings.TrimPrefix(p, root), "/")
		if root == "/" {
			depth++
		}

		if maxDepth > 0 && depth > maxDepth {
			continue
		}

		if err := send(p); err != nil {
			return err
		}
	}

	return nil
}

func (s *Server) Read(req *machine.ReadRequest, stream grpc.ServerStreamingServer[common.Data]) error {
	n, err := s.node(stream.Context())
	if err != nil {
		return err
	}

	content, ok := n.Files[req.GetPath()]
	if !ok {
		return status.Errorf(codes.NotFound, "open %s: no such file or directory", req.GetPath())
	}

	return stream.Send(&common.Data{Metadata: md(n), Bytes: []byte(content)})
}

func (s *Server) Copy(req *machine.CopyRequest, stream grpc.ServerStreamingServer[common.Data]) error {
	n, err := s.node(stream.Context())
	if err != nil {
		return err
	}

	root := path.Clean(req.GetRootPath())

	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)

	for _, p := range append([]string{root}, n.entries(root)...) {
		name := path.Join(path.Base(root), strings.TrimPrefix(p, root))

		if n.isDir(p) {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755}); err != nil {
				return err
			}

			continue
		}

		content := n.Files[p]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(content))}); err != nil {
			return err
		}

		if _, err := tw.Write([]byte(content)); err != nil {
			return err
		}
	}

	if err := tw.Close(); err != nil {
		return err
	}

	return stream.Send(&common.Data{Metadata: md(n), Bytes: buf.Bytes()})
}
